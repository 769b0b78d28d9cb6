"""`make bench` (chat): chat turns through the gateway, no LLM, 8 concurrent sessions.

The whole stack runs as real processes (bench/stack_bench.py; real Redis db 12, real retrieval
with the NG12 PDF ingested by the worker). Each of 8 sessions sends a mix of standalone
questions, follow-ups (topic-enriched and rewritten queries), a greeting and a quote request;
every session has its own history in Redis. Two phases: saturation (closed loop) and the target
rate of 100 requests per second (paced; see bench/stack_bench.py). Prints p50/p95/p99 latency,
requests per second and the CPU each process spent per request. Targets on the 2-core reference
machine: p95 <= 40 ms,
>= 100 req/s. Prints numbers; exits non-zero only if a request failed.
"""

from __future__ import annotations

import os

from stack_bench import Phase, run_load

SESSIONS = int(os.environ.get("BENCH_CLIENTS", "8"))
TURNS_PER_SESSION = int(os.environ.get("BENCH_TURNS", "60"))
REDIS_DB = 12  # its own database: e2e uses 13, bench_assessment 10, tests 15; flushed at start
MESSAGES = [
    "When should I refer unexplained haemoptysis?",
    "And dysphagia?",
    "Penile lesion - when do I refer?",
    "What if they're 60?",
    "Recurrent UTIs in a 65 year old - bladder cancer referral?",
    "hi",
    "Haematemesis - what does NG12 advise?",
    "What about weight loss?",
    "Can you quote the part about duration thresholds?",
]


def request_for(session: int, turn: int) -> tuple[str, str, dict[str, str]]:
    message = MESSAGES[(session + turn) % len(MESSAGES)]
    return "POST", "/api/v1/chat", {"session_id": f"bench-{session}", "message": message}


def main() -> int:
    results = run_load(
        {"saturation": Phase(request_for), "at 100 req/s": Phase(request_for, rate=100.0)},
        redis_db=REDIS_DB,
        clients=SESSIONS,
        per_client=TURNS_PER_SESSION,
        warmup=len(MESSAGES),
    )
    for label, result in results.items():
        print(
            result.summary(
                f"chat via gateway, no LLM, {label}, {SESSIONS} sessions",
                "targets: p95 <= 40 ms, >= 100 req/s",
            )
        )
    return 1 if any(r.errors for r in results.values()) else 0


if __name__ == "__main__":
    raise SystemExit(main())
