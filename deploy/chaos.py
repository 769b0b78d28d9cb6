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
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

CHAT_QUESTION = "When should I refer unexplained haemoptysis?"


#: Settings of the stack under test: rate limits out of the way (the load is the point, not a
#: 429), a half-built index reaped after 5 idle seconds (a killed worker's build).
CHAOS_ENV: dict[str, dict[str, str]] = {
    "gateway": {
        "RATE_LIMIT_USER": "100000/minute",
        "RATE_LIMIT_IP": "100000/minute",
        "RATE_LIMIT_CHAT": "100000/minute",
        "RATE_LIMIT_SIGNIN": "100000/minute",
        "RATE_LIMIT_INGESTION": "1000/hour",
    },
    "retrieval": {"BUILD_IDLE_TIMEOUT_SECONDS": "5"},
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


def wait_stack_ready(stack: Any, timeout: float = 120.0) -> None:
    wait_until(lambda: _ok(f"{gateway(stack)}/readyz"), timeout, "the gateway's /readyz")


def _ok(url: str) -> bool:
    try:
        return httpx.get(url, timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


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
        if while_down is not None:  # the tests' own checks of degraded answers
            while_down()
        time.sleep(max(0.0, under_load - (time.monotonic() - killed)))
        down = load.window(killed + 0.5, time.monotonic())
        restart_seconds = respawn(stack, "retrieval")
        wait_until(lambda: _ok(f"{gateway(stack)}/readyz"), 60, "readiness after the restart")
        back = time.monotonic()
        time.sleep(1.5)
        after = load.window(back)
    stats = load.stats
    chat_down = load.window(killed + 0.5, killed + under_load, kind="chat")
    assess_down = load.window(killed + 0.5, killed + under_load, kind="assess")
    after_version = active_version(stack)
    ok = (
        set(chat_down.statuses) <= {"503"}
        and set(assess_down.statuses) <= {"200-degraded", "200"}
        and down.max_seconds < 5.0
        and after.failed() == 0
        and after.total > 0
        and after_version == before
    )
    return Outcome(
        "retrieval SIGKILL under chat load",
        "chat 503 retrieval_unavailable fast; assessment 200 degraded; full answers after restart",
        f"while down: chat {dict(chat_down.statuses)}, assess {dict(assess_down.statuses)}, slowest "
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


def http_sigterm(stack: Any, name: str, load_seconds: float = 1.5) -> Outcome:
    """SIGTERM of an HTTP service under load: /readyz answers 503 at once, requests keep being
    served through the drain (SHUTDOWN_DRAIN_SECONDS), the ones in flight finish, then it exits
    (no load balancer in front here, so requests after the exit fail until it is back)."""
    port = {
        "gateway": stack.cfg.gateway_port,
        "assessment": stack.cfg.assessment_port,
        "chat": stack.cfg.chat_port,
    }[name]
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
    drain = load.window(termed, exited - 0.3)
    gap = load.window(exited - 0.3, back)
    after = load.window(back)
    # uvicorn re-raises the SIGTERM it handled once its graceful shutdown is done: -15 is a clean exit
    clean = proc.returncode in (0, -signal.SIGTERM)
    ok = readyz == 503 and drain.failed() == 0 and after.failed() == 0 and clean
    return Outcome(
        f"SIGTERM {name} under load",
        "/readyz 503 at once; served through the drain, in-flight requests finish; clean exit",
        f"readyz {readyz}; drain {exited - termed:.1f}s: {dict(drain.statuses)}; exit {proc.returncode}; "
        f"down until restart ({restart_seconds:.1f}s): {dict(gap.statuses)}; after: {dict(after.statuses)}",
        f"{drain.failed()} during the drain; {load.stats.describe()} overall",
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
        wait_until(lambda: _ok(f"{gateway(stack)}/readyz"), 60, "readiness after the Redis restart")
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
    stack: Any, broker_url: str, kill_at_stage: str = "upload", timeout: float = 180.0
) -> Outcome:
    """The ingestion worker SIGKILLed in the middle of a forced re-ingestion, under search load:
    the served version never changes and queries keep answering; the half-built version is failed
    and its data removed (stream cut, or idle past BUILD_IDLE_TIMEOUT_SECONDS); the job message
    stays unacknowledged in the broker (redelivered after the visibility timeout, counted as an
    attempt): nothing lost."""
    import redis

    before = active_version(stack)
    known_before = versions(stack)
    with loaded(stack, "mixed", 2) as load, admin(stack) as client:
        r = client.post("/api/v1/admin/ingestions", json={"force": True, "activate": True})
        r.raise_for_status()
        job_id = r.json()["job_id"]

        def at_stage() -> bool:
            s = client.get(f"/api/v1/admin/ingestions/{job_id}").json()
            return s.get("stage") == kill_at_stage and (s.get("progress") or 0) > 0.05

        wait_until(at_stage, timeout, f"job {job_id} at stage {kill_at_stage}", 0.2)
        kill(stack, "ingestion-worker")
        killed = time.monotonic()
        respawn(stack, "ingestion-worker", 60)

        def build_failed() -> list[str]:
            now = versions(stack)
            return [v for v, st in now.items() if v not in known_before and st == "failed"] or [
                v for v in now if v not in known_before and v != before and now[v] not in ("building",)
            ]

        failed = wait_until(build_failed, 60, "the interrupted build to be marked failed", 0.5)
        time.sleep(1.0)
        during = load.window(killed)
    after_version = active_version(stack)
    broker = redis.Redis.from_url(broker_url)
    unacked = [k for k in broker.hkeys("unacked")]
    held = any(job_id.encode() in (broker.hget("unacked", k) or b"") for k in unacked)
    ok = after_version == before and load.stats.failed() == 0 and held
    return Outcome(
        "worker SIGKILL mid-ingestion",
        "served version unchanged, queries answer; half build failed and removed; job kept in the broker",
        f"killed at '{kill_at_stage}'; build {failed} marked failed; active {before} -> {after_version}; "
        f"queries after the kill: {dict(during.statuses)}; "
        f"job {'held unacked for redelivery' if held else 'NOT in broker'}",
        load.stats.describe(),
        "none (the job is redelivered after the visibility timeout)" if held else "the job message",
        ok,
    )


# --- disk full ------------------------------------------------------------------------------


@contextlib.contextmanager
def small_disk(path: Path, size_mb: int) -> Iterator[str]:
    """A directory that fills up after `size_mb`: a tmpfs of that size when mount works (root),
    else nothing is mounted and the caller limits the process' file size instead (RLIMIT_FSIZE:
    any one file may not grow past the limit; writes past it fail with EFBIG, like ENOSPC they
    fail the write). Yields "tmpfs" or "rlimit"."""
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


def disk_full(seed_chroma: Path, ng12_pdf: Path, work: Path, headroom_mb: int = 2) -> Outcome:
    """An index build that runs out of disk: retrieval on a CHROMA_DIR with room for the index it
    serves plus `headroom_mb`; the worker's pipeline streams a forced rebuild. Expected: the build
    fails with a clear error, is marked failed and removed, the old version keeps serving
    searches, and retrieval keeps running."""
    import grpc

    from ingestion.pipeline import ingest_pdf
    from ng12.retrieval.v1 import retrieval_pb2 as pb
    from ng12.retrieval.v1 import retrieval_pb2_grpc as pb_grpc
    from tests.support import free_port, start_retrieval, stop_process

    used_mb = sum(f.stat().st_size for f in seed_chroma.rglob("*") if f.is_file()) / 2**20
    size_mb = int(used_mb) + headroom_mb
    disk = work / "disk"
    with small_disk(disk / "chroma", size_mb) as how:
        shutil.copytree(seed_chroma, disk / "chroma", dirs_exist_ok=True)
        extra: dict[str, str] = {}
        limit_bytes = (size_mb) * 2**20
        preexec = None
        if how == "rlimit":  # the largest file (Chroma's sqlite) may grow by headroom_mb at most
            largest = max(f.stat().st_size for f in (disk / "chroma").rglob("*") if f.is_file())
            limit_bytes = largest + headroom_mb * 2**20

            def preexec() -> None:  # in the child, before exec
                signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
                resource.setrlimit(resource.RLIMIT_FSIZE, (limit_bytes, limit_bytes))

        proc, port, _, _log = start_retrieval(disk, port=free_port(), extra_env=extra, preexec=preexec)
        addr = f"127.0.0.1:{port}"
        error = ""
        try:
            with grpc.insecure_channel(addr) as ch:
                stub = pb_grpc.RetrievalStub(ch)
                before = stub.GetActiveIndex(pb.GetActiveIndexRequest(), timeout=10).version
                existing = {v.version for v in stub.ListIndexVersions(pb.ListIndexVersionsRequest()).versions}
            try:
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
        finally:
            stop_process(proc)  # type: ignore[arg-type]
        leftover = (
            [p.name for p in (disk / "chroma" / "versions").iterdir()]
            if (disk / "chroma" / "versions").is_dir()
            else []
        )
    new = {v: s for v, s in listed.items() if v not in existing}
    ok = (
        bool(error)
        and alive
        and after == before
        and hits > 0
        and bool(new)
        and all(s == "failed" for s in new.values())
    )
    return Outcome(
        f"disk full during an index build ({how}, {size_mb} MB)"
        if how == "tmpfs"
        else f"disk full during an index build (no tmpfs: RLIMIT_FSIZE {limit_bytes // 2**20} MB per file)",
        "the build fails with a clear error and is removed; the old version keeps serving",
        f"build error: {error or 'none (it fitted)'}; retrieval {'alive' if alive else 'DIED'}; active "
        f"{before} -> {after}; search hits {hits}; new versions {new}; version dirs {sorted(leftover)}",
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
