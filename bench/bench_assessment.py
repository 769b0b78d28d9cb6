"""`make bench` (assessment): assessments through the gateway, rules only, 8 concurrent clients.

The whole stack runs as real processes (bench/stack_bench.py). Phases on the same stack:
- reference patients, saturation: POST /api/v1/assess/{id} over the 10 reference patients in
  turn, 8 clients closed-loop. The patients repeat, so retrieval answers their Search from its
  per-version response cache;
- distinct patients, saturation: POST /api/v1/assess with a record, each request a patient no
  earlier request had (a reference patient's record with another age), so every Search is
  computed (its query embedding is cached: the symptom wording repeats);
- distinct patients at 100 req/s: the same, 8 clients pacing 100 requests per second together
  (the target rate), latency counted from each request's scheduled time.
Prints p50/p95/p99 latency, requests per second and the CPU each process spent per request.
Targets on the 2-core reference machine: p95 <= 40 ms, >= 100 req/s. Prints numbers; exits
non-zero only if a request failed.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any

from stack_bench import REPO, Phase, report, run_load

CLIENTS = int(os.environ.get("BENCH_CLIENTS", "8"))
PER_CLIENT = int(os.environ.get("BENCH_REQUESTS", "800")) // CLIENTS
REDIS_DB = 10  # its own database: e2e uses 13, bench_chat 12, tests 15; flushed at start
PATIENTS = json.loads((REPO / "data" / "patients.json").read_text(encoding="utf-8"))
RECORD_FIELDS = ("age", "gender", "smoking_history", "symptoms", "symptom_duration_days")


def reference(client: int, i: int) -> tuple[str, str, None]:
    patient = PATIENTS[(client + i) % len(PATIENTS)]
    return "POST", f"/api/v1/assess/{patient['patient_id']}", None


def distinct(offset: int) -> Callable[[int, int], tuple[str, str, dict[str, Any]]]:
    def request_for(client: int, i: int) -> tuple[str, str, dict[str, Any]]:
        n = offset + client * PER_CLIENT + i  # unique per request of the phase
        record = {k: PATIENTS[n % len(PATIENTS)][k] for k in RECORD_FIELDS}
        record["age"] = 18 + (n // len(PATIENTS)) % 80
        record["symptom_duration_days"] = 1 + (n // (len(PATIENTS) * 80)) % 365
        return "POST", "/api/v1/assess", record

    return request_for


def main() -> int:
    results = run_load(
        {
            "reference patients, saturation": Phase(reference),
            "distinct patients, saturation": Phase(distinct(0)),
            "distinct patients at 100 req/s": Phase(distinct(10_000), rate=100.0),
        },
        redis_db=REDIS_DB,
        clients=CLIENTS,
        per_client=PER_CLIENT,
    )
    return report(results, f"assessment via gateway, rules only, {{phase}}, {CLIENTS} clients")


if __name__ == "__main__":
    raise SystemExit(main())
