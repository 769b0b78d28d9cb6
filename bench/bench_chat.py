"""`make bench` (chat): chat turns through the gateway, no LLM, 8 concurrent sessions.

The whole stack runs as real processes (bench/stack_bench.py; real Redis db 12, real retrieval
with the NG12 PDF ingested by the worker); every session has its own history in Redis.
Two workloads, each closed-loop (saturation: the most the stack serves, and its latency when
full) and paced at the target rate of 100 requests per second (latency counted from each
request's scheduled time):
- distinct questions: what a GP's questions look like to the stack. Each session asks a
  standalone question about a symptom at an age, then follow-ups (another age, another symptom,
  a quote request); no two sessions of a phase ask the same standalone question, so almost
  every Search is computed and its query embedded (~5 ms of CPU on one core each);
- repeated conversation: 9 fixed messages (standalone questions, follow-ups, a greeting, a
  quote request) cycled by every session, so after the first turns retrieval answers Search
  from its per-version response cache: the cost of chat itself.
Prints p50/p95/p99 latency, requests per second and the CPU each process spent per request.
Targets on the 2-core reference machine: p95 <= 40 ms, >= 100 req/s. Prints numbers; exits
non-zero only if a request failed.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from stack_bench import Phase, report, run_load

SESSIONS = int(os.environ.get("BENCH_CLIENTS", "8"))
TURNS_PER_SESSION = int(os.environ.get("BENCH_TURNS", "100"))
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
#: GP wordings of symptoms and signs NG12 refers on (and a few it does not).
SYMPTOMS = [
    "haemoptysis",
    "dysphagia",
    "rectal bleeding",
    "a breast lump",
    "visible haematuria",
    "unexplained weight loss",
    "persistent hoarseness",
    "a neck lump",
    "iron-deficiency anaemia",
    "bone pain",
    "upper abdominal pain",
    "a change in bowel habit",
    "postmenopausal bleeding",
    "a testicular swelling",
    "jaundice",
    "a pigmented skin lesion",
    "a persistent cough",
    "fatigue",
    "night sweats",
    "unexplained bruising",
    "a rectal mass",
    "abdominal bloating",
    "recurrent urinary tract infections",
    "a penile mass",
    "chest pain",
    "shortness of breath",
    "an abdominal mass",
    "a mouth ulcer",
    "nipple discharge",
    "back pain",
]
FOLLOW_UPS = ["What if they were {age}?", "And with {symptom}?", "Can you quote the part about {symptom}?"]
AGES = 73  # ages 18-90


def repeated(session: int, turn: int) -> tuple[str, str, dict[str, str]]:
    message = MESSAGES[(session + turn) % len(MESSAGES)]
    return "POST", "/api/v1/chat", {"session_id": f"bench-r{session}", "message": message}


def distinct(offset: int) -> Callable[[int, int], tuple[str, str, dict[str, Any]]]:
    """Turn `turn` of session `session`: every 4th turn a standalone question that no other turn
    of the phase asks (symptom x age x session), then three follow-ups."""

    def request_for(session: int, turn: int) -> tuple[str, str, dict[str, Any]]:
        n = offset + session * TURNS_PER_SESSION + turn
        symptom = SYMPTOMS[n % len(SYMPTOMS)]
        age = 18 + (n // len(SYMPTOMS)) % AGES
        step = turn % 4
        if step == 0:
            message = f"{symptom[0].upper()}{symptom[1:]} in a {age}-year-old: when should I refer?"
        else:
            other = SYMPTOMS[(n * 7 + step) % len(SYMPTOMS)]
            message = FOLLOW_UPS[step - 1].format(age=18 + (age * 3) % AGES, symptom=other)
        return "POST", "/api/v1/chat", {"session_id": f"bench-d{offset}-{session}", "message": message}

    return request_for


def main() -> int:
    results = run_load(
        {
            "distinct questions, saturation": Phase(distinct(0)),
            "distinct questions at 100 req/s": Phase(distinct(100_000), rate=100.0),
            "repeated conversation, saturation": Phase(repeated),
            "repeated conversation at 100 req/s": Phase(repeated, rate=100.0),
        },
        redis_db=REDIS_DB,
        clients=SESSIONS,
        per_client=TURNS_PER_SESSION,
        warmup=3 * len(MESSAGES),
    )
    return report(results, f"chat via gateway, no LLM, {{phase}}, {SESSIONS} sessions")


if __name__ == "__main__":
    raise SystemExit(main())
