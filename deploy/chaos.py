"""`make chaos`: inject each fault into the real stack under load and print what happened.

The stack is the one `make run` starts (deploy/run_stack.py), in a temporary VAR_DIR on free
ports, with its OWN redis-server on a free port (never the shared 6379: one fault restarts it).
Load runs through the gateway while each fault is injected; every case reports the fault, the
behaviour expected, what was observed, the failed requests, and whether data was lost.

Faults: worker SIGKILL mid-ingestion; retrieval SIGKILL under chat load; Redis restart;
retrieval made slow (SIGSTOP: every call runs into its deadline); SIGTERM of each HTTP service
under load; disk full during an index build (a small tmpfs when this process may mount one, else
a file-size limit on the retrieval process: see `disk_full`).

The same functions, bounded and fast, are the tests in tests/test_chaos.py.

    python deploy/chaos.py [--keep] [--only NAME ...]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

CHAT_QUESTION = "When should I refer unexplained haemoptysis?"


#: Settings of the stack under test: rate limits out of the way (the load is the point, not a
#: 429), a half-built index reaped after 5 idle seconds (a build whose client died between RPCs;
#: one cut mid-stream fails at once), and a killed worker's job redelivered 5 s after its time
#: limit (180 s: a full NG12 ingestion takes about a minute here) instead of 10 minutes.
CHAOS_ENV: dict[str, dict[str, str]] = {
    "gateway": {
        "RATE_LIMIT_USER": "100000/minute",
        "RATE_LIMIT_IP": "100000/minute",
        "RATE_LIMIT_CHAT": "100000/minute",
        "RATE_LIMIT_SIGNIN": "100000/minute",
        "RATE_LIMIT_INGESTION": "1000/hour",
    },
    "retrieval": {"BUILD_IDLE_TIMEOUT_SECONDS": "5"},
    "ingestion-worker": {
        "INGESTION_TASK_TIME_LIMIT_SECONDS": "180",
        "INGESTION_REDELIVERY_MARGIN_SECONDS": "5",
    },
}


@dataclass
class Outcome:
    fault: str
    expected: str
    observed: str
    errors: str  # failed requests of the load, e.g. "3/120 (503 x3)"
    data_lost: str
    ok: bool


@dataclass
class LoadStats:
    total: int = 0
    statuses: Counter[str] = field(default_factory=Counter)
    max_seconds: float = 0.0

    def failed(self, allowed: frozenset[str] = frozenset()) -> int:
        return sum(n for s, n in self.statuses.items() if not s.startswith("2") and s not in allowed)

    def describe(self) -> str:
        bad = {s: n for s, n in self.statuses.items() if not s.startswith("2")}
        detail = ", ".join(f"{s} x{n}" for s, n in sorted(bad.items()))
        return f"{sum(bad.values())}/{self.total}" + (f" ({detail})" if detail else "")


class Load:
    """Requests through the gateway from `workers` threads until stopped; counts statuses.

    kind: "chat" (POST /chat in one session per thread), "assess" (POST /assess/PT-101) or
    "mixed". A connection error counts as status "conn". Requests time out after `timeout`."""

    def __init__(
        self, base: str, headers: dict[str, str], kind: str = "mixed", workers: int = 2, timeout: float = 15.0
    ) -> None:
        self.base, self.headers, self.kind, self.workers, self.timeout = base, headers, kind, workers, timeout
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self.stats = LoadStats()
        self.samples: list[tuple[float, str, float, str]] = []  # (start, kind, seconds, status)

    def _record(self, kind: str, start: float, status: str) -> None:
        took = time.monotonic() - start
        with self._lock:
            self.stats.total += 1
            self.stats.statuses[status] += 1
            self.stats.max_seconds = max(self.stats.max_seconds, took)
            self.samples.append((start, kind, took, status))

    def _run(self, index: int) -> None:
        with httpx.Client(base_url=self.base, headers=self.headers, timeout=self.timeout) as client:
            session = None
            n = 0
            while not self._stop.is_set():
                kind = self.kind if self.kind != "mixed" else ("chat" if (n + index) % 2 else "assess")
                n += 1
                start = time.monotonic()
                try:
                    if kind == "chat":
                        if session is None:
                            made = client.post("/api/v1/chat/sessions")
                            if made.status_code != 201:
                                self._record(kind, start, str(made.status_code))
                                time.sleep(0.2)
                                continue
                            session = made.json()["session_id"]
                        r = client.post(
                            "/api/v1/chat", json={"session_id": session, "message": CHAT_QUESTION}
                        )
                    else:
                        r = client.post("/api/v1/assess/PT-101")
                    status = str(r.status_code)
                    if r.status_code == 200 and kind == "assess" and r.json().get("degraded"):
                        status = "200-degraded"
                except httpx.HTTPError:
                    status = "conn"
                    time.sleep(0.1)
                self._record(kind, start, status)
                time.sleep(0.05)

    def start(self) -> Load:
        for i in range(self.workers):
            t = threading.Thread(target=self._run, args=(i,), daemon=True, name=f"load-{i}")
            t.start()
            self._threads.append(t)
        return self

    def stop(self) -> LoadStats:
        self._stop.set()
        for t in self._threads:
            t.join(self.timeout + 5)
        return self.stats

    def overlapping(self, since: float, until: float) -> LoadStats:
        """The requests in flight at some point of [since, until): started before `until` and
        not finished before `since`."""
        out = LoadStats()
        with self._lock:
            for start, _k, took, status in self.samples:
                if start < until and start + took >= since:
                    out.total += 1
                    out.statuses[status] += 1
                    out.max_seconds = max(out.max_seconds, took)
        return out

    def window(self, since: float, until: float | None = None, kind: str | None = None) -> LoadStats:
        out = LoadStats()
        with self._lock:
            for start, k, took, status in self.samples:
                if start >= since and (until is None or start < until) and (kind is None or k == kind):
                    out.total += 1
                    out.statuses[status] += 1
                    out.max_seconds = max(out.max_seconds, took)
        return out


@contextlib.contextmanager
def loaded(stack: Any, kind: str = "mixed", workers: int = 2) -> Iterator[Load]:
    load = Load(gateway(stack), stack.auth_headers("clinician"), kind, workers).start()
    try:
        yield load
    finally:
        load.stop()


def gateway(stack: Any) -> str:
    return f"http://127.0.0.1:{stack.cfg.gateway_port}"


def admin(stack: Any) -> httpx.Client:
    return httpx.Client(base_url=gateway(stack), headers=stack.auth_headers("admin"), timeout=30)


def active_version(stack: Any) -> str:
    with admin(stack) as client:
        r = client.get("/api/v1/admin/indexes")
        r.raise_for_status()
        body = r.json()
        return str(body.get("active_version") or "")


def versions(stack: Any) -> dict[str, str]:
    with admin(stack) as client:
        body = client.get("/api/v1/admin/indexes").json()
    return {v["version"]: v["status"] for v in body.get("versions", [])}


def wait_until(predicate: Callable[[], Any], timeout: float, what: str, interval: float = 0.25) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(Exception):
            value = predicate()
            if value:
                return value
        time.sleep(interval)
    raise TimeoutError(f"timed out after {timeout:.0f}s waiting for {what}")


def wait_stack_ready(stack: Any, timeout: float = 120.0, what: str = "the gateway's /readyz") -> None:
    """Until the gateway's /readyz says "ready": every service behind it up and an index served
    (a 200 "degraded" is not enough: the gateway stays in rotation while retrieval is down)."""
    wait_until(lambda: _ready(f"{gateway(stack)}/readyz"), timeout, f"{what} to say 'ready'")


def _ready(url: str) -> bool:
    try:
        r = httpx.get(url, timeout=2)
        return r.status_code == 200 and r.json().get("status") == "ready"
    except (httpx.HTTPError, ValueError):
        return False


def _readiness(url: str) -> tuple[int, dict[str, Any]]:
    """A /readyz answer: (status code, body); (0, {}) when nothing answers."""
    try:
        r = httpx.get(url, timeout=2)
        return r.status_code, r.json()
    except (httpx.HTTPError, ValueError):
        return 0, {}


def kill(stack: Any, name: str, sig: int = signal.SIGKILL) -> None:
    """Send `sig` to a service of the stack (its main process)."""
    os.kill(stack.procs[name].proc.pid, sig)


def respawn(stack: Any, name: str, timeout: float = 120.0) -> float:
    """Start a service again after it died (or was made to exit); seconds until it is up."""
    running = stack.procs.pop(name, None)
    if running is not None and running.proc.poll() is None:
        running.proc.kill()
        running.proc.wait(10)
    start = time.monotonic()
    stack.start_service(name)
    stack.wait_service(name, timeout)
    return time.monotonic() - start


# --- the faults -----------------------------------------------------------------------------


def retrieval_sigkill(
    stack: Any, under_load: float = 3.0, while_down: Callable[[], None] | None = None
) -> Outcome:
    """Retrieval SIGKILLed under chat load: chat answers 503 retrieval_unavailable at once (no
    hang), assessment answers degraded (rules-only, cached knowledge); after a restart both
    answer fully again and the same index version is served."""
    before = active_version(stack)
    with loaded(stack, "mixed", 2) as load:
        time.sleep(1.0)
        killed = time.monotonic()
        kill(stack, "retrieval")
        stack.procs["retrieval"].proc.wait(10)
        gateway_ready = _readiness(f"{gateway(stack)}/readyz")
        if while_down is not None:  # the tests' own checks of degraded answers
            while_down()
        time.sleep(max(0.0, under_load - (time.monotonic() - killed)))
        down = load.window(killed + 0.5, time.monotonic())
        restart_seconds = respawn(stack, "retrieval")
        wait_stack_ready(stack, 60, "readiness after the restart")
        back = time.monotonic()
        time.sleep(1.5)
        after = load.window(back)
    stats = load.stats
    chat_down = load.window(killed + 0.5, killed + under_load, kind="chat")
    assess_down = load.window(killed + 0.5, killed + under_load, kind="assess")
    after_version = active_version(stack)
    # the gateway stays in rotation: its own dependencies are fine, retrieval is advisory
    gateway_degraded = gateway_ready[0] == 200 and gateway_ready[1].get("status") == "degraded"
    gateway_degraded = gateway_degraded and gateway_ready[1].get("checks", {}).get("retrieval", "ok") != "ok"
    ok = (
        gateway_degraded
        and set(chat_down.statuses) <= {"503"}
        and set(assess_down.statuses) <= {"200-degraded", "200"}
        and down.max_seconds < 5.0
        and after.failed() == 0
        and after.total > 0
        and after_version == before
    )
    return Outcome(
        "retrieval SIGKILL under chat load",
        "gateway /readyz 200 degraded; chat 503 retrieval_unavailable fast; assessment 200 degraded; "
        "full answers after restart",
        f"while down: gateway /readyz {gateway_ready[0]} {gateway_ready[1].get('status')!r}, "
        f"chat {dict(chat_down.statuses)}, assess {dict(assess_down.statuses)}, slowest "
        f"{down.max_seconds:.2f}s; restarted in {restart_seconds:.1f}s; after: {dict(after.statuses)}",
        stats.describe(),
        "none" if after_version == before else f"active index {before} -> {after_version}",
        ok,
    )


def retrieval_slow(stack: Any, frozen_for: float = 5.0, deadline: float = 3.0) -> Outcome:
    """Retrieval made slow (SIGSTOP: it accepts connections, answers nothing): every call runs
    into its gRPC deadline, so chat answers 503 'cannot search the guideline' within the deadline
    (plus a margin), and assessment degraded; SIGCONT and all answer again."""
    margin = 2.0
    messages: list[str] = []
    with loaded(stack, "mixed", 2) as load:
        time.sleep(1.0)
        stopped = time.monotonic()
        kill(stack, "retrieval", signal.SIGSTOP)
        try:
            with httpx.Client(base_url=gateway(stack), headers=stack.auth_headers(), timeout=30) as c:
                sid = c.post("/api/v1/chat/sessions").json()["session_id"]
                t0 = time.monotonic()
                r = c.post("/api/v1/chat", json={"session_id": sid, "message": CHAT_QUESTION})
                probe_seconds = time.monotonic() - t0
                messages.append(
                    r.json().get("error", {}).get("message", "")[:80] if r.status_code != 200 else ""
                )
                probe_status = r.status_code
            time.sleep(max(0.0, frozen_for - (time.monotonic() - stopped)))
        finally:
            kill(stack, "retrieval", signal.SIGCONT)
        resumed = time.monotonic()
        time.sleep(2.0)
    chat_slow = load.window(stopped + 0.2, resumed, kind="chat")
    assess_slow = load.window(stopped + 0.2, resumed, kind="assess")
    after = load.window(resumed + 0.5)
    ok = (
        probe_status == 503
        and probe_seconds <= deadline + margin
        and "cannot search" in messages[0]
        and after.failed() == 0
    )
    return Outcome(
        "retrieval made slow (deadline exceeded)",
        f"chat 503 'cannot search the guideline' within {deadline:.0f}s + {margin:.0f}s; assessment degraded",
        f"probe chat {probe_status} in {probe_seconds:.2f}s ('{messages[0]}'); during: chat "
        f"{dict(chat_slow.statuses)}, assess {dict(assess_slow.statuses)}; "
        f"after SIGCONT: {dict(after.statuses)}",
        load.stats.describe(),
        "none",
        ok,
    )


def _drain_seconds(stack: Any, name: str) -> float:
    """The service's SHUTDOWN_DRAIN_SECONDS as the launcher gave it."""
    launcher = sys.modules[type(stack).__module__]
    return float(launcher.service_env(name, stack.cfg).get("SHUTDOWN_DRAIN_SECONDS", "0"))


# a request the load client sends just before the drain ends may reach the service just after it
# (load client -> gateway -> service): such a refusal is the end of the drain, not a failure
_HOP_MARGIN_SECONDS = 0.2


def http_sigterm(stack: Any, name: str, load_seconds: float = 1.5) -> Outcome:
    """SIGTERM of an HTTP service under load: /readyz answers 503 at once; every request in
    flight at the SIGTERM or sent during the drain (SHUTDOWN_DRAIN_SECONDS) is served in full,
    then it exits cleanly. After the drain it stops accepting while it finishes what it holds:
    a load balancer has taken it out of rotation by then; with none in front (here) requests
    sent after the drain fail until the restart, which is reported, not counted."""
    port = {
        "gateway": stack.cfg.gateway_port,
        "assessment": stack.cfg.assessment_port,
        "chat": stack.cfg.chat_port,
    }[name]
    drain_seconds = _drain_seconds(stack, name)
    kind = {"assessment": "assess", "chat": "chat"}.get(name, "mixed")
    proc = stack.procs[name].proc
    with loaded(stack, kind, 2) as load:
        time.sleep(load_seconds)
        termed = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        time.sleep(0.3)
        try:
            readyz = httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=2).status_code
        except httpx.HTTPError:
            readyz = 0
        proc.wait(30)
        exited = time.monotonic()
        restart_seconds = respawn(stack, name)
        wait_stack_ready(stack, 60)
        back = time.monotonic()
        time.sleep(1.0)
    drain_end = termed + drain_seconds - _HOP_MARGIN_SECONDS
    accepted = load.overlapping(termed, drain_end)  # in flight at the SIGTERM or sent in the drain
    gap = load.window(drain_end, back)
    after = load.window(back)
    # uvicorn re-raises the SIGTERM it handled once its graceful shutdown is done: -15 is a clean exit
    clean = proc.returncode in (0, -signal.SIGTERM)
    ok = readyz == 503 and accepted.total > 0 and accepted.failed() == 0 and after.failed() == 0 and clean
    return Outcome(
        f"SIGTERM {name} under load",
        "/readyz 503 at once; requests in flight or sent during the drain all served; clean exit",
        f"readyz {readyz}; in flight or sent in the {drain_seconds:g}s drain: {dict(accepted.statuses)} "
        f"(slowest {accepted.max_seconds:.1f}s); exit {exited - termed:.1f}s after SIGTERM, code "
        f"{proc.returncode}; sent after the drain until the restart ({restart_seconds:.1f}s): "
        f"{dict(gap.statuses)}; after: {dict(after.statuses)}",
        f"{accepted.failed()} in flight or in the drain; {load.stats.describe()} overall",
        "none",
        ok,
    )


def redis_restart(stack: Any, redis_proc: subprocess.Popen[bytes], start_redis: Callable[[], Any]) -> Outcome:
    """The stack's Redis (a private redis-server with AOF) restarted under chat load: chat
    answers 503 redis_unavailable while it is away, then answers again; a session's history
    written before is still there (AOF)."""
    with httpx.Client(base_url=gateway(stack), headers=stack.auth_headers(), timeout=30) as c:
        sid = c.post("/api/v1/chat/sessions").json()["session_id"]
        c.post("/api/v1/chat", json={"session_id": sid, "message": CHAT_QUESTION}).raise_for_status()
        turns_before = len(c.get(f"/api/v1/chat/{sid}/history").json()["turns"])
    with loaded(stack, "chat", 2) as load:
        time.sleep(1.0)
        stopped = time.monotonic()
        redis_proc.send_signal(signal.SIGTERM)  # redis-server writes its AOF and exits
        redis_proc.wait(15)
        time.sleep(2.0)
        new_proc = start_redis()
        started = time.monotonic()
        wait_stack_ready(stack, 60, "readiness after the Redis restart")
        back = time.monotonic()
        time.sleep(2.0)
    during = load.window(stopped + 0.2, started)
    after = load.window(back + 0.5)
    with httpx.Client(base_url=gateway(stack), headers=stack.auth_headers(), timeout=30) as c:
        turns_after = len(c.get(f"/api/v1/chat/{sid}/history").json()["turns"])
    lost = turns_after < turns_before
    ok = set(during.statuses) <= {"503", "200", "conn"} and after.failed() == 0 and not lost
    return (
        Outcome(
            "Redis restart",
            "chat 503 redis_unavailable while away, no hang; answers again after; history kept (AOF)",
            f"while away: {dict(during.statuses)} (slowest {during.max_seconds:.2f}s); ready again "
            f"{back - started:.1f}s after start; after: {dict(after.statuses)}",
            load.stats.describe(),
            f"history turns {turns_before} -> {turns_after}" + (" LOST" if lost else ": none"),
            ok,
        )
        if new_proc is not None
        else Outcome("Redis restart", "", "could not restart Redis", "", "?", False)
    )


def worker_sigkill(
    stack: Any,
    broker_url: str,
    kill_at_stage: str = "upload",
    timeout: float = 180.0,
    redelivery_timeout: float = 240.0,
    await_completion: bool = True,
) -> Outcome:
    """The ingestion worker SIGKILLed in the middle of a forced re-ingestion (its chunk stream to
    retrieval), under search load: the served version never changes and queries keep answering;
    the half-built version is failed at once (the stream ended without its end marker), with its
    folder and Chroma collection removed; the job message stays unacknowledged in the broker and
    is redelivered once its visibility timeout passes (attempt 2), and, with `await_completion`,
    that attempt finishes the job: nothing lost."""
    import redis

    from tests.support import chroma_collections

    index_dir = stack.cfg.var_dir / "chroma"
    before = active_version(stack)
    known_before = versions(stack)
    with loaded(stack, "mixed", 2) as load, admin(stack) as client:
        r = client.post("/api/v1/admin/ingestions", json={"force": True, "activate": True})
        r.raise_for_status()
        job_id = r.json()["job_id"]

        def job() -> dict[str, Any]:
            body: dict[str, Any] = client.get(f"/api/v1/admin/ingestions/{job_id}").json()
            return body

        def at_stage() -> bool:
            s = job()
            return s.get("stage") == kill_at_stage and (s.get("progress") or 0) > 0.05

        wait_until(at_stage, timeout, f"job {job_id} at stage {kill_at_stage}", 0.2)
        building = [v for v, st in versions(stack).items() if v not in known_before and st == "building"]
        had_data = [v for v in building if f"ng12-chunks-{v}" in chroma_collections(index_dir)]
        kill(stack, "ingestion-worker")
        killed = time.monotonic()

        def build_ended() -> list[dict[str, Any]] | None:
            listed = client.get("/api/v1/admin/indexes").json()["versions"]
            new = [v for v in listed if v["version"] not in known_before]
            return new if new and all(v["status"] != "building" for v in new) else None

        new = wait_until(build_ended, 30, "the interrupted build to be failed", 0.2)
        failed_in = time.monotonic() - killed
        during = load.window(killed)
        after_version = active_version(stack)
        broker = redis.Redis.from_url(broker_url)
        held = any(job_id.encode() in (broker.hget("unacked", k) or b"") for k in broker.hkeys("unacked"))
        respawn(stack, "ingestion-worker", 60)
        attempts_key = f"ng12:ingestion:attempts:{job_id}"  # ingestion.tasks counts every delivery
        wait_until(
            lambda: int(broker.get(attempts_key) or 0) >= 2,
            redelivery_timeout,
            f"job {job_id} redelivered (attempt 2)",
            0.5,
        )
        redelivered_in = time.monotonic() - killed
        final: dict[str, Any] = {}
        if await_completion:
            final = wait_until(
                lambda: (s := job())["state"] in {"SUCCESS", "FAILURE"} and s, timeout, "the job's end", 1
            )
    leftovers = {v["version"] for v in new} & (
        {p.name for p in (index_dir / "versions").iterdir()}
        | {c.removeprefix("ng12-chunks-") for c in chroma_collections(index_dir)}
    )
    cut = all(v["status"] == "failed" and ("cut off" in v["error"] or "cancelled" in v["error"]) for v in new)
    completed = not await_completion or (
        final["state"] == "SUCCESS" and (final.get("result") or {}).get("attempt") == 2
    )
    ok = (
        after_version == before
        and during.failed() == 0
        and bool(had_data)
        and cut
        and failed_in < 10.0  # at once, or after the batch being embedded when the kill landed
        and not leftovers
        and held
        and completed
    )
    return Outcome(
        "worker SIGKILL mid-ingestion",
        "served version unchanged, queries answer; half build failed at once (stream cut) and its "
        "data removed; job held unacked, redelivered (attempt 2)"
        + (" and completed" if await_completion else ""),
        f"killed at '{kill_at_stage}' with {had_data} holding vectors; "
        f"{[(v['version'], v['status'], v['error'][:60]) for v in new]} {failed_in:.1f}s after the kill; "
        f"data left: {sorted(leftovers) or 'none'}; active {before} -> {after_version}; "
        f"queries after the kill: {dict(during.statuses)}; "
        f"job {'held unacked' if held else 'NOT in broker'}, attempt 2 {redelivered_in:.0f}s after the kill"
        + (f", ended {final['state']}" if await_completion else ""),
        load.stats.describe(),
        "none" if held and completed else "the job",
        ok,
    )


# --- disk full ------------------------------------------------------------------------------


@contextlib.contextmanager
def small_disk(path: Path, size_mb: int) -> Iterator[str]:
    """A directory that fills up after `size_mb`: a tmpfs of that size when mount works (root),
    else nothing is mounted and the caller limits the process' file size instead (RLIMIT_FSIZE:
    any one file may not grow past the limit; writes past it fail with EFBIG, like ENOSPC they
    fail the write). Yields "tmpfs" or "rlimit"; `free_disk` makes room again."""
    path.mkdir(parents=True, exist_ok=True)
    mounted = False
    if shutil.which("mount") and os.geteuid() == 0:
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size_mb}m,mode=0700", "tmpfs", str(path)],
            capture_output=True,
            check=False,
        )
        mounted = done.returncode == 0
    try:
        yield "tmpfs" if mounted else "rlimit"
    finally:
        if mounted:
            subprocess.run(["umount", "-l", str(path)], capture_output=True, check=False)


def free_disk(path: Path, how: str, pid: int, size_mb: int) -> str:
    """Make room on a `small_disk` as an operator would: the tmpfs grown by 64 MB (remount), or
    the process' file-size limit lifted (its soft limit raised to its unlimited hard limit)."""
    if how == "tmpfs":
        done = subprocess.run(
            ["mount", "-o", f"remount,size={size_mb + 64}m", str(path)], capture_output=True, check=False
        )
        return "tmpfs grown by 64 MB" if done.returncode == 0 else f"remount failed: {done.stderr!r}"
    unlimited = resource.RLIM_INFINITY
    resource.prlimit(pid, resource.RLIMIT_FSIZE, (unlimited, unlimited))
    return "file-size limit lifted"


def _registry_pending(index_dir: Path) -> list[str]:
    """The versions the registry on disk names as still to be removed (`pending_removal`)."""
    registry = json.loads((index_dir / "registry.json").read_text(encoding="utf-8"))
    return list(registry.get("pending_removal", []))


def disk_full(
    seed_chroma: Path,
    ng12_pdf: Path,
    work: Path,
    headroom_mb: int = 2,
    kb_file: Path | None = None,
    cleanup_timeout: float = 20.0,
) -> Outcome:
    """An index build that runs out of disk: retrieval on a CHROMA_DIR with room for the index it
    serves plus `headroom_mb`; the worker's pipeline streams a forced rebuild (with `kb_file`, a
    knowledge base already parsed from `ng12_pdf` is streamed, as the pipeline does after its
    parse: the fault is in the build, not the parse). Expected: the build fails with a clear
    error and is marked failed, the old version keeps serving searches, and retrieval keeps
    running. The failed build's folder and Chroma collection are removed at once, or (deleting a
    collection writes to the full disk) once room is made: the disk is freed after the failure,
    and within `cleanup_timeout` retrieval's maintenance pass (every second here) has removed
    them and saved a registry with nothing left pending."""
    import grpc

    from ingestion.index_upload import upload_index
    from ingestion.pipeline import ingest_pdf
    from ng12.retrieval.v1 import retrieval_pb2 as pb
    from ng12.retrieval.v1 import retrieval_pb2_grpc as pb_grpc
    from ng12_common.knowledge import KnowledgeBase
    from tests.support import chroma_collections, free_port, start_retrieval, stop_process

    used_mb = sum(f.stat().st_size for f in seed_chroma.rglob("*") if f.is_file()) / 2**20
    size_mb = int(used_mb) + headroom_mb
    disk = work / "disk"
    index_dir = disk / "chroma"

    def leftovers(versions: Iterable[str]) -> list[str]:
        """Those of `versions` whose folder or Chroma collection is still on disk."""
        folders = {p.name for p in (index_dir / "versions").iterdir()}
        collections = chroma_collections(index_dir)
        return sorted(v for v in versions if v in folders or f"ng12-chunks-{v}" in collections)

    with small_disk(index_dir, size_mb) as how:
        shutil.copytree(seed_chroma, index_dir, dirs_exist_ok=True)
        extra = {"INDEX_CLEANUP_RETRY_SECONDS": "1"}
        limit_bytes = (size_mb) * 2**20
        preexec = None
        if how == "rlimit":  # the largest file (Chroma's sqlite) may grow by headroom_mb at most
            largest = max(f.stat().st_size for f in index_dir.rglob("*") if f.is_file())
            limit_bytes = largest + headroom_mb * 2**20

            def preexec() -> None:  # in the child, before exec; the hard limit stays, to lift it later
                signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
                resource.setrlimit(resource.RLIMIT_FSIZE, (limit_bytes, resource.RLIM_INFINITY))

        proc, port, _, _log = start_retrieval(disk, port=free_port(), extra_env=extra, preexec=preexec)
        addr = f"127.0.0.1:{port}"
        error = ""
        left_at_failure: list[str] = []
        cleanup = "not reached"
        cleaned = False
        try:
            with grpc.insecure_channel(addr) as ch:
                stub = pb_grpc.RetrievalStub(ch)
                before = stub.GetActiveIndex(pb.GetActiveIndexRequest(), timeout=10).version
                existing = {v.version for v in stub.ListIndexVersions(pb.ListIndexVersionsRequest()).versions}
            try:
                if kb_file is not None:
                    kb = KnowledgeBase.model_validate_json(kb_file.read_text(encoding="utf-8"))
                    upload_index(addr, kb, timeout=120, pdf_path=ng12_pdf)
                else:
                    ingest_pdf(ng12_pdf, addr, kb_dir=work / "kb", force=True, timeout=120)
            except Exception as exc:  # noqa: BLE001 - the failure is the expected outcome
                details = exc.details() if isinstance(exc, grpc.RpcError) else str(exc)  # type: ignore[attr-defined]
                error = f"{type(exc).__name__}: {details}"[:160]
            alive = proc.poll() is None  # type: ignore[attr-defined]
            with grpc.insecure_channel(addr) as ch:
                stub = pb_grpc.RetrievalStub(ch)
                after = stub.GetActiveIndex(pb.GetActiveIndexRequest(), timeout=10).version
                hits = len(
                    stub.Search(
                        pb.SearchRequest(query=CHAT_QUESTION, top_k=3, mode=pb.SEARCH_MODE_CHAT), timeout=10
                    ).hits
                )
                listed = {
                    v.version: v.status
                    for v in stub.ListIndexVersions(pb.ListIndexVersionsRequest()).versions
                }
            new = {v: s for v, s in listed.items() if v not in existing}
            left_at_failure = leftovers(new)
            freed = free_disk(index_dir, how, proc.pid, size_mb)  # type: ignore[attr-defined]
            freed_at = time.monotonic()
            try:
                wait_until(
                    lambda: not leftovers(new) and not _registry_pending(index_dir),
                    cleanup_timeout,
                    "the failed build's data removed",
                    0.5,
                )
                cleaned = True
                cleanup = (
                    f"removed at once ({freed} after)"
                    if not left_at_failure
                    else f"{left_at_failure} left by the full disk, removed "
                    f"{time.monotonic() - freed_at:.1f}s after the disk was freed ({freed})"
                )
            except TimeoutError:
                cleanup = (
                    f"{leftovers(new)} still on disk {cleanup_timeout:.0f}s after the disk was freed "
                    f"({freed}); registry pending {_registry_pending(index_dir)}"
                )
            alive = alive and proc.poll() is None  # type: ignore[attr-defined]
        finally:
            stop_process(proc)  # type: ignore[arg-type]
        folders = {p.name for p in (index_dir / "versions").iterdir()}
    ok = (
        bool(error)
        and alive
        and after == before
        and hits > 0
        and bool(new)
        and all(s == "failed" for s in new.values())
        and cleaned
        and before in folders
    )
    return Outcome(
        f"disk full during an index build ({how}, {size_mb} MB)"
        if how == "tmpfs"
        else f"disk full during an index build (no tmpfs: RLIMIT_FSIZE {limit_bytes // 2**20} MB per file)",
        "the build fails with a clear error; its folder and Chroma collection removed, at once or once "
        "the disk is freed; the old version keeps serving",
        f"build error: {error or 'none (it fitted)'}; retrieval {'alive' if alive else 'DIED'}; active "
        f"{before} -> {after}; search hits {hits}; new versions {new}; their data: {cleanup}",
        "0 searches failed" if hits > 0 else "searches failed",
        "none" if after == before and hits > 0 else "served index lost",
        ok,
    )


# --- the table ------------------------------------------------------------------------------


def table(outcomes: list[Outcome]) -> str:
    cols = ("fault", "expected", "observed", "errors", "data lost", "result")
    rows = [
        (o.fault, o.expected, o.observed, o.errors, o.data_lost, "PASS" if o.ok else "FAIL") for o in outcomes
    ]
    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def _start_redis(port: int, data: Path) -> subprocess.Popen[bytes]:
    data.mkdir(parents=True, exist_ok=True)
    proc = subprocess.Popen(
        [
            "redis-server",
            "--bind",
            "127.0.0.1",
            "--port",
            str(port),
            "--dir",
            str(data),
            "--appendonly",
            "yes",
            "--appendfsync",
            "always",
            "--save",
            "",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    import redis

    wait_until(lambda: redis.Redis(port=port, socket_connect_timeout=0.5).ping(), 10, "redis-server")
    return proc


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keep", action="store_true", help="keep the temporary VAR_DIR (logs) afterwards")
    parser.add_argument("--only", nargs="*", default=None, help="run only these faults (names below)")
    args = parser.parse_args(argv)
    from tests.support import find_pdf, free_port, load_launcher, stack_config

    launcher = load_launcher()
    var = Path(tempfile.mkdtemp(prefix="ng12-chaos-"))
    redis_port = free_port()
    redis_url = f"redis://127.0.0.1:{redis_port}/0"
    redis_box = {"proc": _start_redis(redis_port, var / "redis")}
    pdf = find_pdf()
    cfg = stack_config(
        launcher,
        redis_url=redis_url,
        ng12_pdf=pdf,
        var_dir=var,
        extra_env=CHAOS_ENV,
    )
    stack = launcher.Stack(cfg)
    outcomes: list[Outcome] = []
    print(f"chaos: starting the stack in {var} (Redis on port {redis_port}; the first start ingests NG12)")
    stack.start()

    def restart_redis() -> subprocess.Popen[bytes]:
        redis_box["proc"] = _start_redis(redis_port, var / "redis")
        return redis_box["proc"]

    cases: dict[str, Callable[[], Outcome]] = {
        "worker-kill": lambda: worker_sigkill(stack, redis_url),
        "retrieval-kill": lambda: retrieval_sigkill(stack),
        "redis-restart": lambda: redis_restart(stack, redis_box["proc"], restart_redis),
        "retrieval-slow": lambda: retrieval_slow(stack),
        "sigterm-assessment": lambda: http_sigterm(stack, "assessment"),
        "sigterm-chat": lambda: http_sigterm(stack, "chat"),
        "sigterm-gateway": lambda: http_sigterm(stack, "gateway"),
        "disk-full": lambda: disk_full(var / "chroma", pdf, var / "disk-full"),
    }
    try:
        ready = stack.wait_ready(900)
        print(f"chaos: stack ready in {ready:.0f}s")
        for name, case in cases.items():
            if args.only and name not in args.only:
                continue
            print(f"chaos: {name} ...", flush=True)
            try:
                outcome = case()
            except Exception as exc:  # noqa: BLE001 - report the case as failed and go on
                outcome = Outcome(name, "", f"the case itself failed: {exc!r}"[:300], "?", "?", False)
            outcomes.append(outcome)
            print(f"chaos: {name}: {'PASS' if outcome.ok else 'FAIL'}", flush=True)
            with contextlib.suppress(Exception):
                wait_stack_ready(stack, 120)
    finally:
        stack.stop()
        redis_box["proc"].terminate()
        redis_box["proc"].wait(10)
        if not args.keep:
            shutil.rmtree(var, ignore_errors=True)
        else:
            print(f"chaos: logs kept in {var / 'logs'}")
    print()
    print(table(outcomes))
    return 0 if outcomes and all(o.ok for o in outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())
