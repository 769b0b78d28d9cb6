"""`make bench` (chat part): chat turns through the gateway, no LLM, 8 concurrent sessions.

Starts the whole stack with deploy/run_stack.Stack on free ports (real Redis db 12, real
retrieval with the NG12 PDF ingested by the worker, chat, gateway), warms up, then runs 8
sessions concurrently, each sending a mix of standalone questions and follow-ups, and prints
p50/p95 latency and throughput. Targets: p95 <= 40 ms, >= 100 req/s. Prints numbers only.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
SESSIONS = 8
TURNS_PER_SESSION = 40
MESSAGES = [
    "When should I refer unexplained haemoptysis?",
    "And dysphagia?",
    "Penile lesion - when do I refer?",
    "What if they're 60?",
    "Recurrent UTIs in a 65 year old - bladder cancer referral?",
    "hi",
    "Haematemesis - what does NG12 advise?",
    "What about weight loss?",
]


def _launcher():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("run_stack", ROOT / "deploy" / "run_stack.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["run_stack"] = module
    spec.loader.exec_module(module)
    return module


async def _session(client: httpx.AsyncClient, sid: str, latencies: list[float]) -> None:
    for i in range(TURNS_PER_SESSION):
        start = time.perf_counter()
        reply = await client.post(
            "/api/v1/chat", json={"session_id": sid, "message": MESSAGES[i % len(MESSAGES)]}
        )
        latencies.append(time.perf_counter() - start)
        reply.raise_for_status()


async def _run(base_url: str) -> dict[str, float]:
    limits = httpx.Limits(max_connections=SESSIONS * 2)
    async with httpx.AsyncClient(base_url=base_url, timeout=30, limits=limits) as client:
        for message in MESSAGES:  # warm-up (model, caches, connections)
            (
                await client.post("/api/v1/chat", json={"session_id": "warm", "message": message})
            ).raise_for_status()
        latencies: list[float] = []
        start = time.perf_counter()
        await asyncio.gather(*(_session(client, f"bench-{i}", latencies) for i in range(SESSIONS)))
        elapsed = time.perf_counter() - start
    ordered = sorted(latencies)
    return {
        "requests": len(ordered),
        "concurrency": SESSIONS,
        "p50_ms": round(statistics.median(ordered) * 1000, 1),
        "p95_ms": round(ordered[int(0.95 * (len(ordered) - 1))] * 1000, 1),
        "req_per_s": round(len(ordered) / elapsed, 1),
    }


def main() -> int:
    import redis

    from tests.support import find_pdf, free_port

    launcher = _launcher()
    base = __import__("os").environ.get("TEST_REDIS_URL", "redis://127.0.0.1:6379/15")
    url = re.sub(r"/\d+$", "/12", base)
    redis.Redis.from_url(url).flushdb()
    with tempfile.TemporaryDirectory() as tmp:
        cfg = launcher.StackConfig(
            gateway_port=free_port(),
            assessment_port=free_port(),
            chat_port=free_port(),
            retrieval_port=free_port(),
            retrieval_metrics_port=free_port(),
            worker_metrics_port=free_port(),
            redis_url=url,
            ng12_pdf=find_pdf(),
            var_dir=Path(tmp),
            environment="test",
            admin_api_key="bench-admin-key",
            log_to_files=True,
        )
        stack = launcher.Stack(cfg)
        stack.start()
        try:
            stack.wait_ready(600)
            result = asyncio.run(_run(f"http://127.0.0.1:{cfg.gateway_port}"))
        finally:
            stack.stop()
    result["target_p95_ms"] = 40
    result["target_req_per_s"] = 100
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
