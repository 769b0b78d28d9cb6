"""Shared harness of the through-the-gateway benchmarks (bench_assessment.py, bench_chat.py).

- The whole stack runs as real processes on free ports, started by deploy/run_stack.Stack as
  `make run` and the end-to-end test start it, with the real NG12 PDF ingested by the worker.
- Each phase runs N clients (sessions) with the client aiohttp (C-accelerated HTTP parsing, so
  that on a 2-core machine the cores go to the services rather than to the load generator):
  - saturation (`rate=None`): closed loop, each client sends its next request as soon as the last
    one answered: the most requests per second the stack serves, and its latency when full;
  - paced (`rate=R`): the N clients together send R requests per second on a fixed schedule
    (client c's i-th request at (i*N + c)/R s); a client still waiting for an earlier reply sends
    late, and latency is counted from the scheduled time, so a stall is not hidden (no
    coordinated omission).
- Reported: p50/p95/p99/max latency, requests per second, and the CPU time each service process
  (and the load generator) spent per request, read from /proc before and after the load.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

#: (method, path, JSON body or None) of a client's i-th request.
RequestFor = Callable[[int, int], tuple[str, str, Any]]


@dataclass(frozen=True)
class Phase:
    request_for: RequestFor
    rate: float | None = None  # requests per second for all clients together; None: saturation


@dataclass
class LoadResult:
    latencies_ms: list[float]
    elapsed_s: float
    errors: int
    cpu_ms_per_request: dict[str, float] = field(default_factory=dict)

    def summary(self, label: str, targets: str) -> str:
        ms = sorted(self.latencies_ms)
        q = statistics.quantiles(ms, n=100)
        cpu = ", ".join(f"{name} {value:.1f}" for name, value in self.cpu_ms_per_request.items())
        return (
            f"{label}, {len(ms)} requests ({self.errors} errors): p50 {q[49]:.1f} ms, p95 {q[94]:.1f} ms, "
            f"p99 {q[98]:.1f} ms, max {ms[-1]:.1f} ms, {len(ms) / self.elapsed_s:.1f} req/s ({targets})\n"
            f"  CPU ms per request: {cpu}"
        )


def _cpu_seconds(pid: int) -> float:
    """user + system CPU seconds of a process and its live children (HTTP_WORKERS > 1 runs a
    service's workers under a supervisor process), from Linux /proc."""
    total = 0.0
    for stat in [Path(f"/proc/{pid}/stat"), *_children_stats(pid)]:
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:  # exited meanwhile
            continue
        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


def _children_stats(pid: int) -> list[Path]:
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            ppid = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if ppid == pid:
            out.append(stat)
    return out


async def _drive(
    base_url: str,
    request_for: RequestFor,
    clients: int,
    per_client: int,
    warmup: int,
    rate: float | None = None,
    headers: dict[str, str] | None = None,
) -> tuple[list[float], float, int]:
    import aiohttp

    latencies: list[float] = []
    errors = 0
    connector = aiohttp.TCPConnector(limit=clients * 2)
    chat_sessions: dict[str, str] = {}  # the phase's session names -> ids the server made
    async with aiohttp.ClientSession(base_url, connector=connector, headers=headers or {}) as session:
        refused: set[int] = set()  # statuses of refused session requests, printed once each

        async def session_id(name: str) -> str | int:
            """The server's session id for a phase's session name, or the HTTP status that refused
            to make one (401 signed out, 429 rate limited): the request then counts as an error."""
            if name not in chat_sessions:
                async with session.post("/api/v1/chat/sessions") as made:
                    text = await made.text()
                    try:
                        made_id = json.loads(text)["session_id"] if made.status in (200, 201) else None
                    except (ValueError, KeyError, TypeError):
                        made_id = None
                    if not isinstance(made_id, str):
                        status = made.status if made.status not in (200, 201) else 502
                        if status not in refused:
                            refused.add(status)
                            print(f"POST /api/v1/chat/sessions answered {made.status}: {text[:200]}")
                        return status
                    chat_sessions[name] = made_id
            return chat_sessions[name]

        async def send(client: int, i: int) -> int:
            method, path, body = request_for(client, i)
            if body and "session_id" in body:
                made = await session_id(str(body["session_id"]))
                if isinstance(made, int):
                    return made  # no session: counted as an error, not sent
                body = {**body, "session_id": made}
            async with session.request(method, path, json=body) as reply:
                await reply.read()
                return reply.status

        for i in range(warmup):
            status = await send(clients, i)  # a client id of its own: warm-up state stays apart
            if status != 200:
                raise RuntimeError(f"warm-up request {i} answered {status}")

        async def client_loop(client: int) -> None:
            nonlocal errors
            for i in range(per_client):
                start = time.perf_counter()
                if rate:
                    scheduled = started + (i * clients + client) / rate
                    await asyncio.sleep(max(0.0, scheduled - start))
                    start = scheduled
                status = await send(client, i)
                latencies.append((time.perf_counter() - start) * 1000)
                errors += status != 200

        started = time.perf_counter() + 0.05
        await asyncio.gather(*(client_loop(c) for c in range(clients)))
        elapsed = time.perf_counter() - started
    return latencies, elapsed, errors


def run_load(
    phases: dict[str, Phase],
    *,
    redis_db: int,
    clients: int = 8,
    per_client: int = 100,
    warmup: int = 40,
    log_level: str = "WARNING",
) -> dict[str, LoadResult]:
    """Start the stack, run each phase's load in turn, stop the stack. Returns one result per
    phase; the services' CPU is measured over each phase's load (not its warm-up)."""
    import redis

    from tests.support import find_pdf, load_launcher, stack_config

    redis_url = re.sub(
        r"/\d+$", f"/{redis_db}", os.environ.get("TEST_REDIS_URL", "redis://127.0.0.1:6379/15")
    )
    redis.Redis.from_url(redis_url).flushdb()
    launcher = load_launcher()
    with tempfile.TemporaryDirectory(prefix="ng12-bench-") as var_dir:
        cfg = stack_config(
            launcher,
            redis_url=redis_url,
            ng12_pdf=find_pdf(),
            var_dir=Path(var_dir),
            log_level=log_level,
            extra_env={"gateway": UNLIMITED},
        )
        stack = launcher.Stack(cfg)
        stack.start()
        try:
            ready = stack.wait_ready(600)
            print(f"stack ready in {ready:.1f} s (log level {log_level})", flush=True)
            pids = {name: running.proc.pid for name, running in stack.procs.items()}
            base_url = f"http://127.0.0.1:{cfg.gateway_port}"
            headers = stack.auth_headers("clinician")
            results = {
                label: _result(
                    *asyncio.run(_measured(base_url, phase, clients, per_client, warmup, pids, headers))
                )
                for label, phase in phases.items()
            }
        finally:
            stack.stop()
    return results


def _result(
    latencies: list[float], elapsed: float, errors: int, cpu: dict[str, float], own: float
) -> LoadResult:
    n = max(1, len(latencies))
    per_request = {name: seconds * 1000 / n for name, seconds in cpu.items() if seconds > 0}
    per_request["load generator"] = own * 1000 / n
    return LoadResult(latencies, elapsed, errors, per_request)


async def _measured(
    base_url: str,
    phase: Phase,
    clients: int,
    per_client: int,
    warmup: int,
    pids: dict[str, int],
    headers: dict[str, str],
) -> tuple[list[float], float, int, dict[str, float], float]:
    if warmup:
        await _drive(base_url, phase.request_for, clients, 0, warmup, headers=headers)
    before = {name: _cpu_seconds(pid) for name, pid in pids.items()}
    own_before = time.process_time()
    latencies, elapsed, errors = await _drive(
        base_url, phase.request_for, clients, per_client, 0, phase.rate, headers
    )
    own = time.process_time() - own_before
    cpu = {name: _cpu_seconds(pid) - before[name] for name, pid in pids.items()}
    return latencies, elapsed, errors, cpu, own


TARGETS = "targets: p95 <= 40 ms, >= 100 req/s"
# The load generator is one user at hundreds of requests a second: lift the gateway's rate limits.
UNLIMITED = {
    "RATE_LIMIT_USER": "1000000/minute",
    "RATE_LIMIT_IP": "1000000/minute",
    "RATE_LIMIT_CHAT": "1000000/minute",
}


def report(results: dict[str, LoadResult], label: str, targets: str = TARGETS) -> int:
    """Print each phase's summary, labelled `label` with "{phase}" filled in; return the exit
    status: 1 if a request failed."""
    for phase, result in results.items():
        print(result.summary(label.format(phase=phase), targets))
    return 1 if any(r.errors for r in results.values()) else 0
