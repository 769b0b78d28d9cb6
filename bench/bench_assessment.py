"""`make bench` (assessment): latency and throughput of POST /api/v1/assess through the gateway.

The whole stack (Redis must be running; retrieval, ingestion worker, assessment, chat, gateway)
is started by deploy/run_stack.Stack on free ports, as tests/test_e2e_stack.py does, with the
real NG12 PDF indexed. Rules only (no LLM). 8 concurrent clients post the 10 reference patients
in turn; prints p50/p95/p99 latency and requests per second. Targets: p95 <= 40 ms, >= 100 req/s.
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CLIENTS = int(os.environ.get("BENCH_CLIENTS", "8"))
REQUESTS = int(os.environ.get("BENCH_REQUESTS", "800"))
WARMUP = 40
PATIENTS = [f"PT-{n}" for n in range(101, 111)]
REDIS_DB = 10  # its own database: e2e uses 13, bench_chat 12, tests 15; flushed at start


def _launcher():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("run_stack", REPO / "deploy" / "run_stack.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["run_stack"] = module
    spec.loader.exec_module(module)
    return module


async def _drive(base_url: str) -> tuple[list[float], float, int]:
    import httpx

    latencies: list[float] = []
    errors = 0
    counter = iter(range(REQUESTS))
    limits = httpx.Limits(max_connections=CLIENTS, max_keepalive_connections=CLIENTS)
    async with httpx.AsyncClient(base_url=base_url, timeout=30, limits=limits) as client:
        for i in range(WARMUP):
            (await client.post(f"/api/v1/assess/{PATIENTS[i % len(PATIENTS)]}")).raise_for_status()

        async def worker() -> None:
            nonlocal errors
            for i in counter:
                start = time.perf_counter()
                reply = await client.post(f"/api/v1/assess/{PATIENTS[i % len(PATIENTS)]}")
                latencies.append(time.perf_counter() - start)
                if reply.status_code != 200:
                    errors += 1

        started = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(CLIENTS)))
        elapsed = time.perf_counter() - started
    return latencies, elapsed, errors


def main() -> int:
    sys.path.insert(0, str(REPO))
    from tests.support import find_pdf, free_port

    redis_url = re.sub(
        r"/\d+$", f"/{REDIS_DB}", os.environ.get("TEST_REDIS_URL", "redis://127.0.0.1:6379/15")
    )
    import redis

    redis.Redis.from_url(redis_url).flushdb()
    launcher = _launcher()
    with tempfile.TemporaryDirectory(prefix="bench-assessment-") as var_dir:
        cfg = launcher.StackConfig(
            gateway_port=free_port(),
            assessment_port=free_port(),
            chat_port=free_port(),
            retrieval_port=free_port(),
            retrieval_metrics_port=free_port(),
            worker_metrics_port=free_port(),
            redis_url=redis_url,
            ng12_pdf=find_pdf(),
            var_dir=Path(var_dir),
            environment="test",
            log_level="WARNING",
            admin_api_key="bench-admin-key",
            log_to_files=True,
        )
        stack = launcher.Stack(cfg)
        stack.start()
        try:
            ready = stack.wait_ready(600)
            print(f"stack ready in {ready:.1f}s (gateway :{cfg.gateway_port})")
            latencies, elapsed, errors = asyncio.run(_drive(f"http://127.0.0.1:{cfg.gateway_port}"))
        finally:
            stack.stop()
    ms = sorted(x * 1000 for x in latencies)
    q = statistics.quantiles(ms, n=100)
    print(
        f"assessment via gateway, rules only, {CLIENTS} clients, {len(ms)} requests ({errors} errors): "
        f"p50 {q[49]:.1f} ms, p95 {q[94]:.1f} ms, p99 {q[98]:.1f} ms, max {ms[-1]:.1f} ms, "
        f"{len(ms) / elapsed:.1f} req/s (targets: p95 <= 40 ms, >= 100 req/s)"
    )
    return 1 if errors else 0


if __name__ == "__main__":
    raise SystemExit(main())
