"""Helpers for tests that run real processes: free ports, waiting, log capture."""

from __future__ import annotations

import importlib.util
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def find_pdf() -> Path:
    """The NG12 PDF: $NG12_PDF, else ../shared/ng12/ng12.pdf, else data/ng12.pdf."""
    candidates = [
        os.environ.get("NG12_PDF", ""),
        str(REPO.parent / "shared/ng12/ng12.pdf"),
        "/work/shared/ng12/ng12.pdf",
        str(REPO / "data/ng12.pdf"),
    ]
    for c in candidates:
        if c and Path(c).is_file():
            return Path(c)
    raise FileNotFoundError(
        "The NG12 PDF is needed by the tests: set NG12_PDF to its path "
        "(download: https://www.nice.org.uk/guidance/ng12, 'Download guidance (PDF)')."
    )


def wait_for(predicate, timeout: float, interval: float = 0.2, what: str = "condition"):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    last_exc: Exception | None = None
    while time.monotonic() < deadline:
        try:
            value = predicate()
            if value:
                return value
        except Exception as exc:  # noqa: BLE001 - keep polling until the deadline
            last_exc = exc
        time.sleep(interval)
    raise TimeoutError(f"timed out after {timeout}s waiting for {what}; last error: {last_exc!r}")


def start_process(
    args: list[str], env: dict[str, str], log_path: Path, preexec: Callable[[], None] | None = None
) -> subprocess.Popen[bytes]:
    log_path.parent.mkdir(parents=True, exist_ok=True)
    fh = log_path.open("ab")
    return subprocess.Popen(
        [sys.executable, *args], env=env, stdout=fh, stderr=subprocess.STDOUT, cwd=REPO, preexec_fn=preexec
    )


def stop_process(proc: subprocess.Popen[bytes], timeout: float = 10.0) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


@dataclass
class RetrievalProcess:
    addr: str
    port: int
    metrics_port: int
    chroma_dir: Path
    log_path: Path
    version: str


def start_retrieval(
    tmp: Path,
    port: int | None = None,
    extra_env: dict[str, str] | None = None,
    preexec: Callable[[], None] | None = None,
) -> tuple[object, int, int, Path]:
    port = port or free_port()
    metrics_port = free_port()
    env = {
        **os.environ,
        "GRPC_HOST": "127.0.0.1",
        "GRPC_PORT": str(port),
        "METRICS_PORT": str(metrics_port),
        "CHROMA_DIR": str(tmp / "chroma"),
        "LOG_LEVEL": "INFO",
        "ENVIRONMENT": "test",
        **(extra_env or {}),
    }
    log_path = tmp / "retrieval.log"
    proc = start_process(["-m", "retrieval"], env, log_path, preexec)

    def _up() -> bool:
        if proc.poll() is not None:
            raise RuntimeError(f"retrieval exited with {proc.returncode}; see {log_path}")
        import grpc

        with grpc.insecure_channel(f"127.0.0.1:{port}") as ch:
            grpc.channel_ready_future(ch).result(timeout=0.5)
        return True

    wait_for(_up, 120, 0.5, "retrieval gRPC port")
    return proc, port, metrics_port, log_path


def find_eval_dev(name: str) -> Path:
    """A development-case file: $NG12_EVAL_DEV/name, else ../shared/eval-dev or /work/shared/eval-dev."""
    candidates = [
        Path(os.environ.get("NG12_EVAL_DEV", "/nonexistent")) / name,
        REPO.parent / "shared" / "eval-dev" / name,
        Path("/work/shared/eval-dev") / name,
    ]
    for c in candidates:
        if c.is_file():
            return c
    raise FileNotFoundError(f"development cases {name} not found; set NG12_EVAL_DEV to the eval-dev folder")


def load_script(name: str, path: Path) -> Any:
    """A script outside the packages (deploy/*.py) imported as module `name`."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def load_launcher() -> Any:
    """deploy/run_stack.py (the `make run` launcher) as a module: Stack, StackConfig."""
    return load_script("run_stack", REPO / "deploy" / "run_stack.py")


def stack_config(launcher: Any, *, redis_url: str, ng12_pdf: Path, var_dir: Path, **extra: Any) -> Any:
    """A launcher StackConfig on free ports, logging to files under var_dir (tests, benches)."""
    values: dict[str, Any] = {
        "environment": "test",
        "log_to_files": True,
        **extra,
    }
    return launcher.StackConfig(
        gateway_port=free_port(),
        assessment_port=free_port(),
        chat_port=free_port(),
        retrieval_port=free_port(),
        retrieval_metrics_port=free_port(),
        worker_metrics_port=free_port(),
        gateway_metrics_port=free_port(),
        redis_url=redis_url,
        ng12_pdf=ng12_pdf,
        var_dir=var_dir,
        **values,
    )


def start_chroma_server(tmp: Path, port: int | None = None) -> tuple[subprocess.Popen[bytes], int]:
    """A real Chroma server (`chroma run`, the pinned chromadb's CLI) on loopback, data in tmp."""
    port = port or free_port()
    log_path = tmp / "chroma-server.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    chroma = Path(sys.executable).parent / "chroma"
    proc = subprocess.Popen(
        [
            str(chroma),
            "run",
            "--path",
            str(tmp / "chroma-server"),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
        ],
        env={**os.environ, "ANONYMIZED_TELEMETRY": "False"},
        stdout=log_path.open("ab"),
        stderr=subprocess.STDOUT,
        cwd=tmp,
    )

    def _up() -> bool:
        if proc.poll() is not None:
            raise RuntimeError(f"chroma run exited with {proc.returncode}; see {log_path}")
        import urllib.request

        with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v2/heartbeat", timeout=1) as r:
            return bool(r.status == 200)

    wait_for(_up, 60, 0.2, "Chroma server heartbeat")
    return proc, port


def kb_slice(kb: Any, start: int, end: int) -> Any:
    """A KnowledgeBase holding recommendations start..end (by their rule_search chunks) and nothing
    else: two slices share no chunk, so a test can build distinguishable index versions."""
    chunks = [c for c in kb.chunks if c.doc_type == "rule_search"][start:end]
    ids = {r for c in chunks for r in c.recommendation_ids}
    return kb.model_copy(
        update={
            "chunks": chunks,
            "recommendations": [r for r in kb.recommendations if r.id in ids],
            "symptom_rows": [],
        }
    )


def chroma_collections(index_dir: Path) -> set[str]:
    """Names of the Chroma collections of an embedded index (`CHROMA_DIR`), read from Chroma's
    SQLite file read-only: a live retrieval process owns that database, and a second Chroma
    client must not open it."""
    import contextlib
    import sqlite3

    database = index_dir / "chroma" / "chroma.sqlite3"
    with contextlib.closing(sqlite3.connect(f"file:{database}?mode=ro", uri=True)) as db:
        return {str(row[0]) for row in db.execute("SELECT name FROM collections")}


def served_recommendation(
    rid: str,
    text: str,
    *,
    action: str = "suspected_cancer_pathway_referral",
    criteria: dict[str, Any] | None = None,
    group: str = "any",
    cancer_site: str = "site",
    strength: str = "consider",
    page: int = 10,
) -> Any:
    """A made-up served recommendation for unit tests (its section from its id)."""
    from ng12_common.criteria import parse_criteria
    from ng12_common.served_recommendations import ServedRecommendation

    return ServedRecommendation(
        id=rid,
        section=rid.rsplit(".", 1)[0],
        cancer_site=cancer_site,
        page=page,
        text=text,
        action=action,
        strength=strength,
        population={"age_group": group},
        criteria=parse_criteria(criteria) if criteria else None,
    )
