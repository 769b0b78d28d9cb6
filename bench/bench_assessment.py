"""`make bench` (assessment): POST /api/v1/assess/{id} through the gateway, rules only.

The whole stack runs as real processes (bench/stack_bench.py); 8 concurrent clients post the
10 reference patients in turn. Prints p50/p95/p99 latency, requests per second and the CPU
each process spent per request. Targets on the 2-core reference machine: p95 <= 40 ms,
>= 100 req/s. Prints numbers; exits non-zero only if a request failed.
"""

from __future__ import annotations

import os

from stack_bench import run_load

CLIENTS = int(os.environ.get("BENCH_CLIENTS", "8"))
PER_CLIENT = int(os.environ.get("BENCH_REQUESTS", "800")) // CLIENTS
PATIENTS = [f"PT-{n}" for n in range(101, 111)]
REDIS_DB = 10  # its own database: e2e uses 13, bench_chat 12, tests 15; flushed at start


def request_for(client: int, i: int) -> tuple[str, str, None]:
    return "POST", f"/api/v1/assess/{PATIENTS[(client + i) % len(PATIENTS)]}", None


def main() -> int:
    result = run_load(request_for, redis_db=REDIS_DB, clients=CLIENTS, per_client=PER_CLIENT)
    print(
        result.summary(
            f"assessment via gateway, rules only, {CLIENTS} clients", "targets: p95 <= 40 ms, >= 100 req/s"
        )
    )
    return 1 if result.errors else 0


if __name__ == "__main__":
    raise SystemExit(main())
