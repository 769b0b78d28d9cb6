"""`make run`: start the whole NG12 Assessor stack as local processes (no Docker needed).

Starts the services of deploy/stack_spec.py with the SAME environment keys the compose file
gives them, in dependency order: retrieval -> ingestion worker -> assessment, chat ->
gateway. Uses REDIS_URL (default redis://127.0.0.1:6379/0); if nothing answers there and
`redis-server` is installed, starts one. On first start with no active index the worker
ingests the NG12 PDF at NG12_PDF (default data/ng12.pdf). Ready when the gateway's /readyz
says `"status": "ready"` (every service up and an index served; a 200 with "degraded" is not
enough). Ctrl-C (or SIGTERM) stops every process it started.

Overrides (environment): PORT (gateway), ASSESSMENT_PORT, CHAT_PORT, RETRIEVAL_PORT,
RETRIEVAL_METRICS_PORT, WORKER_METRICS_PORT, GATEWAY_METRICS_PORT, REDIS_URL, NG12_PDF, VAR_DIR
(state: chroma, kb, logs, auth, the gateway database; default var/), LOG_LEVEL, ENVIRONMENT,
READY_TIMEOUT (seconds), OTEL_EXPORTER_OTLP_ENDPOINT (traces to an OTLP/gRPC collector). Any
other key of deploy/stack_spec.py set in the environment (GEMINI_ENABLED, HTTP_WORKERS,
OIDC_ISSUER...) is passed to every service that has it; ports, addresses, paths under VAR_DIR
and the retrieval service token are always the launcher's own (services listen on 127.0.0.1).
On first start the gateway creates the local accounts `clinician` and
`admin` and writes their passwords once to VAR_DIR/auth/initial-passwords.txt.

Also importable: tests start a stack on free ports with `Stack(StackConfig(...))`.
"""

from __future__ import annotations

import importlib.util
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import IO
from urllib.parse import urlparse

from ng12_common.jobs import BOOTSTRAP_LOCK, first_ingestion_failure

REPO = Path(__file__).resolve().parents[1]
NICE_URL = "https://www.nice.org.uk/guidance/ng12"


def _load_spec() -> ModuleType:
    spec = importlib.util.spec_from_file_location("stack_spec", REPO / "deploy" / "stack_spec.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("stack_spec", module)
    spec.loader.exec_module(module)
    return module


stack_spec = _load_spec()


@dataclass
class StackConfig:
    gateway_port: int = 8000
    assessment_port: int = 8001
    chat_port: int = 8002
    retrieval_port: int = 50051
    retrieval_metrics_port: int = 9101
    worker_metrics_port: int = 9102
    gateway_metrics_port: int = 9100
    # index-changing retrieval RPCs need it: a new random one per run, shared by worker and gateway
    retrieval_service_token: str = field(default_factory=lambda: secrets.token_urlsafe(24))
    redis_url: str = "redis://127.0.0.1:6379/0"
    ng12_pdf: Path = REPO / "data" / "ng12.pdf"
    var_dir: Path = REPO / "var"
    environment: str = "development"
    log_level: str = "INFO"
    log_to_files: bool = False  # tests: one log file per service under var_dir/logs
    otel_endpoint: str = ""  # OTEL_EXPORTER_OTLP_ENDPOINT of every service: traces off when empty
    extra_env: dict[str, dict[str, str]] = field(default_factory=dict)  # per-service extras

    @classmethod
    def from_environ(cls, env: dict[str, str] | None = None) -> StackConfig:
        e = os.environ if env is None else env
        base = cls()
        return cls(
            gateway_port=int(e.get("PORT", base.gateway_port)),
            assessment_port=int(e.get("ASSESSMENT_PORT", base.assessment_port)),
            chat_port=int(e.get("CHAT_PORT", base.chat_port)),
            retrieval_port=int(e.get("RETRIEVAL_PORT", base.retrieval_port)),
            retrieval_metrics_port=int(e.get("RETRIEVAL_METRICS_PORT", base.retrieval_metrics_port)),
            worker_metrics_port=int(e.get("WORKER_METRICS_PORT", base.worker_metrics_port)),
            gateway_metrics_port=int(e.get("GATEWAY_METRICS_PORT", base.gateway_metrics_port)),
            redis_url=e.get("REDIS_URL", base.redis_url),
            ng12_pdf=Path(e.get("NG12_PDF", str(base.ng12_pdf))).resolve(),
            var_dir=Path(e.get("VAR_DIR", str(base.var_dir))).resolve(),
            environment=e.get("ENVIRONMENT", base.environment),
            log_level=e.get("LOG_LEVEL", base.log_level),
            otel_endpoint=e.get("OTEL_EXPORTER_OTLP_ENDPOINT", base.otel_endpoint),
        )


def service_env(name: str, cfg: StackConfig, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of one service: exactly the spec's keys. The ones this launcher computes
    (ports, addresses, paths under VAR_DIR, the service token, ENVIRONMENT, LOG_LEVEL...) have
    this config's values; any other key takes its value from `environ` (default: this process's
    environment, so `GEMINI_ENABLED=true make run` works), else the spec's default."""
    spec = stack_spec.service(name)
    shell = os.environ if environ is None else environ
    retrieval_addr = f"127.0.0.1:{cfg.retrieval_port}"
    values = {
        "HOST": "127.0.0.1",  # make run listens on loopback only
        "GRPC_HOST": "127.0.0.1",
        "ENVIRONMENT": cfg.environment,
        "LOG_LEVEL": cfg.log_level,
        "GRPC_PORT": str(cfg.retrieval_port),
        "CHROMA_DIR": str(cfg.var_dir / "chroma"),
        "REDIS_URL": cfg.redis_url,
        "RETRIEVAL_ADDR": retrieval_addr,
        "NG12_PDF": str(cfg.ng12_pdf),
        "KB_DIR": str(cfg.var_dir / "kb"),
        "UPLOAD_DIR": str(cfg.var_dir / "uploads"),
        "PATIENTS_FILE": str(REPO / "data" / "patients.json"),
        "ASSESSMENT_URL": f"http://127.0.0.1:{cfg.assessment_port}",
        "CHAT_URL": f"http://127.0.0.1:{cfg.chat_port}",
        "AUTH_DIR": str(cfg.var_dir / "auth"),
        "RETRIEVAL_SERVICE_TOKEN": cfg.retrieval_service_token,
        "GATEWAY_DATABASE_URL": f"sqlite:///{cfg.var_dir / 'gateway' / 'gateway.sqlite3'}",
        "FRONTEND_DIR": str(REPO / "frontend"),
        "OTEL_EXPORTER_OTLP_ENDPOINT": cfg.otel_endpoint,
    }
    port = {"gateway": cfg.gateway_port, "assessment": cfg.assessment_port, "chat": cfg.chat_port}.get(name)
    if port is not None:
        values["PORT"] = str(port)
    if name == "retrieval":
        values["METRICS_PORT"] = str(cfg.retrieval_metrics_port)
        values["REDIS_URL"] = ""  # one embedded-Chroma process: no replicas to announce versions to
    if name == "ingestion-worker":
        values["METRICS_PORT"] = str(cfg.worker_metrics_port)
        values["HEARTBEAT_FILE"] = str(cfg.var_dir / "ingestion" / "heartbeat")
    if name == "gateway":
        values["METRICS_PORT"] = str(cfg.gateway_metrics_port)
    keys = {**stack_spec.COMMON_ENV, **spec.env}
    env = {k: values[k] if k in values else shell.get(k, default) for k, default in keys.items()}
    env.update(cfg.extra_env.get(name, {}))
    return env


@dataclass
class Running:
    name: str
    proc: subprocess.Popen[bytes]
    log_path: Path | None


class Stack:
    ORDER = ("retrieval", "ingestion-worker", "assessment", "chat", "gateway")

    def __init__(self, cfg: StackConfig) -> None:
        self.cfg = cfg
        self.procs: dict[str, Running] = {}
        self.redis_proc: subprocess.Popen[bytes] | None = None
        self._stale_bootstrap: str | None = None  # a first-start ingestion of an earlier run

    # --- processes ----------------------------------------------------------------------

    def start_service(self, name: str) -> Running:
        spec = stack_spec.service(name)
        env = {**os.environ, **service_env(name, self.cfg)}
        env["PYTHONUNBUFFERED"] = "1"
        log_path = None
        out: IO[bytes] | None = None  # None: inherit the console
        if self.cfg.log_to_files:
            log_path = self.cfg.var_dir / "logs" / f"{name}.log"
            log_path.parent.mkdir(parents=True, exist_ok=True)
            out = log_path.open("ab")
        proc = subprocess.Popen(
            [sys.executable, *spec.command],
            env=env,
            cwd=REPO,
            stdout=out,
            stderr=subprocess.STDOUT if out else None,
        )
        running = Running(name, proc, log_path)
        self.procs[name] = running
        return running

    def stop_service(self, name: str, timeout: float = 15.0) -> None:
        running = self.procs.pop(name, None)
        if running is None:
            return
        _terminate(running.proc, timeout)

    def restart_service(self, name: str, ready_timeout: float = 60.0) -> None:
        self.stop_service(name)
        self.start_service(name)
        self.wait_service(name, ready_timeout)

    def start(self) -> None:
        self.cfg.var_dir.mkdir(parents=True, exist_ok=True)
        self._stale_bootstrap = self._bootstrap_task()
        self.start_service("retrieval")
        self.wait_service("retrieval", 180)
        for name in ("ingestion-worker", "assessment", "chat", "gateway"):
            self.start_service(name)

    def stop(self) -> None:
        for name in reversed(self.ORDER):
            self.stop_service(name)
        if self.redis_proc is not None:
            _terminate(self.redis_proc, 5)
            self.redis_proc = None

    # --- readiness ----------------------------------------------------------------------

    def _bootstrap_task(self) -> str | None:
        import redis

        try:
            raw = redis.Redis.from_url(self.cfg.redis_url, socket_timeout=1).get(BOOTSTRAP_LOCK)
        except (redis.RedisError, ValueError):
            return None
        return raw.decode() if isinstance(raw, bytes) else None

    def _first_ingestion_failure(self) -> str | None:
        import redis

        try:
            client = redis.Redis.from_url(self.cfg.redis_url, socket_timeout=1)
            return first_ingestion_failure(client, self._stale_bootstrap)
        except (redis.RedisError, ValueError):
            return None

    def _check_alive(self) -> None:
        for r in self.procs.values():
            if r.proc.poll() is not None:
                where = f"; see {r.log_path}" if r.log_path else ""
                raise RuntimeError(f"{r.name} exited with code {r.proc.returncode}{where}")

    def service_up(self, name: str) -> bool:
        if name == "ingestion-worker":  # its liveness: the heartbeat file is fresh
            heartbeat = self.cfg.var_dir / "ingestion" / "heartbeat"
            try:
                return time.time() - heartbeat.stat().st_mtime <= stack_spec.HEARTBEAT_MAX_AGE_SECONDS
            except OSError:
                return False
        if name == "retrieval":
            import grpc

            with grpc.insecure_channel(f"127.0.0.1:{self.cfg.retrieval_port}") as ch:
                try:
                    grpc.channel_ready_future(ch).result(timeout=0.5)
                except grpc.FutureTimeoutError:
                    return False
                return True
        port = {
            "gateway": self.cfg.gateway_port,
            "assessment": self.cfg.assessment_port,
            "chat": self.cfg.chat_port,
            "ingestion-worker": self.cfg.worker_metrics_port,
        }[name]
        path = "/livez"
        return _http_ok(f"http://127.0.0.1:{port}{path}")

    def wait_service(self, name: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self._check_alive()
            if self.service_up(name):
                return
            time.sleep(0.25)
        raise TimeoutError(f"{name} did not come up within {timeout:.0f}s")

    def wait_ready(self, timeout: float) -> float:
        """Wait until the gateway's /readyz says "ready" (every dependency up, an active index; the
        gateway answers 200 "degraded" before that). A failed first-start ingestion (bad or
        missing PDF...) is reported at once, not at the timeout."""
        start = time.monotonic()
        while time.monotonic() - start < timeout:
            self._check_alive()
            if fully_ready(f"http://127.0.0.1:{self.cfg.gateway_port}/readyz"):
                return time.monotonic() - start
            failure = self._first_ingestion_failure()
            if failure:
                logs = self.procs.get("ingestion-worker")
                where = f"; see {logs.log_path}" if logs and logs.log_path else ""
                raise RuntimeError(
                    f"the first ingestion of {self.cfg.ng12_pdf} failed ({failure}), so there is no "
                    f"NG12 index to serve{where}"
                )
            time.sleep(0.5)
        raise TimeoutError(
            f"the stack was not ready within {timeout:.0f}s (GET /readyz on the gateway: status 'ready')"
        )

    # --- redis ----------------------------------------------------------------------------

    def ensure_redis(self) -> str:
        """Use Redis at REDIS_URL, or start a local redis-server there; return what was done."""
        if _redis_ok(self.cfg.redis_url):
            return f"using Redis at {self.cfg.redis_url}"
        exe = shutil.which("redis-server")
        u = urlparse(self.cfg.redis_url)
        if exe is None or u.hostname not in ("127.0.0.1", "localhost"):
            raise SystemExit(
                f"No Redis answers at {self.cfg.redis_url} and none can be started here.\n"
                "Install Redis (Debian/Ubuntu: apt-get install redis-server; macOS: brew install redis)\n"
                "or point REDIS_URL at a running Redis."
            )
        data = self.cfg.var_dir / "redis"
        data.mkdir(parents=True, exist_ok=True)
        self.redis_proc = subprocess.Popen(
            [
                exe,
                "--bind",
                "127.0.0.1",
                "--port",
                str(u.port or 6379),
                "--dir",
                str(data),
                "--appendonly",
                "yes",
                "--maxmemory-policy",
                "noeviction",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if _redis_ok(self.cfg.redis_url):
                return f"started redis-server on port {u.port or 6379} (data in {data})"
            time.sleep(0.2)
        raise SystemExit("redis-server was started but does not answer; see its output")

    # --- signing in (tests, benchmarks, evaluations) ---------------------------------------------

    def auth_headers(self, role: str = "clinician") -> dict[str, str]:
        """Authorization header of the local account `role` (its password from initial-passwords.txt)."""
        from gateway.security.local_accounts import read_initial_passwords

        password = read_initial_passwords(self.cfg.var_dir / "auth")[role]
        data = urllib.parse.urlencode({"username": role, "password": password}).encode()
        url = f"http://127.0.0.1:{self.cfg.gateway_port}/api/v1/auth/token"
        with urllib.request.urlopen(urllib.request.Request(url, data=data), timeout=10) as reply:
            token = json.load(reply)["access_token"]
        return {"Authorization": f"Bearer {token}"}


def fully_ready(url: str) -> bool:
    """A service's /readyz at `url` answers 200 with `"status": "ready"`: every check passes,
    advisory ones included (the gateway's /readyz is 200 "degraded" while a service behind it,
    e.g. retrieval with no index yet, is not ready)."""
    try:
        with urllib.request.urlopen(url, timeout=1.5) as resp:  # noqa: S310 - local probe
            return int(resp.status) == 200 and json.loads(resp.read()).get("status") == "ready"
    except (OSError, ValueError):
        return False


def _http_ok(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=1.5) as resp:  # noqa: S310 - local probe
            return 200 <= int(resp.status) < 300
    except OSError:
        return False


def _redis_ok(url: str) -> bool:
    import redis

    try:
        return bool(redis.Redis.from_url(url, socket_connect_timeout=1).ping())
    except redis.RedisError:
        return False


def _terminate(proc: subprocess.Popen[bytes], timeout: float) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


def _has_active_index(cfg: StackConfig) -> bool:
    """True when retrieval's registry (var/chroma/registry.json) names an active version."""
    registry = cfg.var_dir / "chroma" / "registry.json"
    if not registry.is_file():
        return False
    try:
        return bool(json.loads(registry.read_text(encoding="utf-8")).get("active"))
    except (OSError, ValueError):
        return False


def main() -> int:
    cfg = StackConfig.from_environ()
    if not cfg.ng12_pdf.is_file() and not _has_active_index(cfg):
        sys.stderr.write(
            f"The NG12 PDF was not found at {cfg.ng12_pdf}.\n"
            f"Download it from {NICE_URL} ('Download guidance (PDF)') and save it as data/ng12.pdf,\n"
            "or run `make ng12-pdf` (needs internet), or set NG12_PDF to where it is.\n"
        )
        return 1
    stack = Stack(cfg)

    def _stop(*_: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, _stop)
    started = time.monotonic()
    try:
        print(f"[run] {stack.ensure_redis()}", flush=True)
        stack.start()
        stack.wait_ready(float(os.environ.get("READY_TIMEOUT", "300")))
        print(
            f"[run] NG12 Assessor ready in {time.monotonic() - started:.1f}s at "
            f"http://127.0.0.1:{cfg.gateway_port}/ (API docs: /docs). Ctrl-C stops everything.",
            flush=True,
        )
        while True:
            stack._check_alive()
            time.sleep(1)
    except KeyboardInterrupt:
        print("\n[run] stopping...", flush=True)
        return 0
    except (RuntimeError, TimeoutError) as exc:
        sys.stderr.write(f"[run] {exc}\n")
        return 1
    finally:
        stack.stop()


if __name__ == "__main__":
    raise SystemExit(main())
