"""PDF upload to POST /api/v1/admin/ingestions, end to end on real processes: the gateway, a REAL
Celery ingestion worker (its own process, this test's queue), real Redis and the session's REAL
retrieval server. Bad files are refused with nothing queued or stored; the active version's own
PDF is `unchanged`; a new PDF is queued, a second request meanwhile gets 409, and the job's report
names the new version, its counts, warnings and criteria coverage."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from fastapi.testclient import TestClient

from gateway.app import create_app
from gateway.settings import GatewaySettings
from services.gateway.tests.conftest import REPO, bearer, security_settings
from tests.support import RetrievalProcess, free_port, start_process, stop_process

ADMIN = bearer("root", "admin")
MB = 1024 * 1024


@pytest.fixture(scope="module")
def setup(
    retrieval_addr: str, redis_url: str, ng12_pdf: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, Any]]:
    tmp = tmp_path_factory.mktemp("upload")
    prefix = f"test:upload:{os.getpid()}:{time.monotonic_ns()}"
    queue = f"{prefix}:queue"
    uploads = tmp / "uploads"
    env = {
        **os.environ,
        "REDIS_URL": redis_url,
        "RETRIEVAL_ADDR": retrieval_addr,
        "UPLOAD_DIR": str(uploads),
        "KB_DIR": str(tmp / "kb"),
        "NG12_PDF": str(ng12_pdf),
        "INGEST_ON_START": "never",
        "INGESTION_QUEUE": queue,
        "METRICS_PORT": str(free_port()),
        "ENVIRONMENT": "test",
    }
    worker = start_process(["-m", "ingestion", "worker"], env, tmp / "worker.log")
    settings = GatewaySettings(
        **{
            **security_settings(tmp, prefix),
            "assessment_url": f"http://127.0.0.1:{free_port()}",
            "chat_url": f"http://127.0.0.1:{free_port()}",
            "retrieval_addr": retrieval_addr,
            "redis_url": redis_url,
            "frontend_dir": REPO / "frontend",
            "job_key_prefix": f"{prefix}:jobs",
            "ingestion_queue": queue,
            "upload_dir": uploads,
            "max_upload_bytes": 2 * MB,
            "rate_limit_ingestion": "100/minute",
            "environment": "test",
        }
    )
    raw = redis.Redis.from_url(redis_url)
    try:
        with TestClient(create_app(settings), raise_server_exceptions=False) as client:
            yield {
                "client": client,
                "queue": queue,
                "uploads": uploads,
                "redis": raw,
                "pdf": ng12_pdf,
                "tmp": tmp,
            }
    finally:
        stop_process(worker)
        for key in raw.scan_iter(match=f"{prefix}*"):
            raw.delete(key)
        raw.close()


def _post(client: TestClient, content: bytes, *, ctype: str = "application/pdf", **fields: str) -> Any:
    return client.post(
        "/api/v1/admin/ingestions",
        files={"pdf": ("guideline.pdf", content, ctype)},
        data={"activate": "false", **fields},
        headers=ADMIN,
    )


def _nothing_queued(s: dict[str, Any]) -> None:
    assert s["redis"].llen(s["queue"]) == 0
    assert not s["uploads"].exists() or not list(s["uploads"].glob("*"))
    assert s["client"].get("/api/v1/admin/ingestions", headers=ADMIN).json()["jobs"] == []


def test_bad_uploads_are_refused_and_nothing_is_queued(setup: dict[str, Any]) -> None:
    client = setup["client"]
    pdf = setup["pdf"].read_bytes()
    cases = [
        (b"", "application/pdf", 422, "empty_file"),
        (b"hello, this is not a PDF at all", "application/pdf", 415, "not_a_pdf"),
        (pdf[:4096], "application/pdf", 422, "unreadable_pdf"),
        (pdf[:4096], "text/plain", 415, "unsupported_media_type"),
        (b"%PDF-1.7\n" + b"0" * (2 * MB), "application/pdf", 413, "file_too_large"),
        (b"%PDF-1.7\n" + b"0" * (3 * MB), "application/pdf", 413, "file_too_large"),  # refused unread
    ]
    for content, ctype, status, code in cases:
        r = _post(client, content, ctype=ctype)
        assert r.status_code == status, (code, r.text)
        assert r.json()["error"]["code"] == code and r.json()["error"]["message"]
    missing = client.post(
        "/api/v1/admin/ingestions", data={"activate": "false"}, files={"x": ("a", b"1")}, headers=ADMIN
    )
    assert missing.status_code == 422 and missing.json()["error"]["fields"][0]["field"] == "pdf"
    flag = _post(client, pdf, activate="maybe")
    assert flag.status_code == 422 and flag.json()["error"]["fields"][0]["field"] == "activate"
    other = client.post(
        "/api/v1/admin/ingestions", content=b"pdf", headers={**ADMIN, "Content-Type": "text/plain"}
    )
    assert other.status_code == 415
    _nothing_queued(setup)
    audit = client.get("/api/v1/admin/audit?kind=admin", headers=ADMIN).json()["records"]
    refused = [r["summary"].get("refused") for r in audit if r["summary"].get("action") == "ingestion_upload"]
    assert {"empty_file", "not_a_pdf", "unreadable_pdf", "file_too_large"} <= set(refused)


def test_the_active_versions_own_pdf_is_unchanged(setup: dict[str, Any]) -> None:
    client = setup["client"]
    active = client.get("/api/v1/admin/indexes", headers=ADMIN).json()["active_version"]
    r = _post(client, setup["pdf"].read_bytes())
    assert r.status_code == 200, r.text
    assert r.json()["status"] == "unchanged" and r.json()["version"] == active
    _nothing_queued(setup)


def _wait(client: TestClient, job_id: str, timeout: float = 600) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    seen: set[str] = set()
    while time.monotonic() < deadline:
        state: dict[str, Any] = client.get(f"/api/v1/admin/ingestions/{job_id}", headers=ADMIN).json()
        seen.add(state["stage"])
        if state["state"] in ("SUCCESS", "FAILURE"):
            state["seen_stages"] = seen
            return state
        time.sleep(0.5)
    raise TimeoutError(f"job {job_id} did not finish: {state}")


def test_upload_builds_a_version_one_job_at_a_time(setup: dict[str, Any]) -> None:
    client = setup["client"]
    before = client.get("/api/v1/admin/indexes", headers=ADMIN).json()
    # another edition: the same PDF with bytes appended after %%EOF (a different sha256)
    edition = setup["pdf"].read_bytes() + b"\n% NG12 test edition\n"
    started = _post(client, edition)
    assert started.status_code == 202, started.text
    job_id = started.json()["job_id"]
    assert started.json()["status"] == "queued"

    busy = _post(client, edition)
    assert busy.status_code == 409 and busy.json()["error"]["code"] == "ingestion_running"
    assert busy.json()["error"]["job_id"] == job_id
    busy_json = client.post("/api/v1/admin/ingestions", json={"activate": False}, headers=ADMIN)
    assert busy_json.status_code == 409 and busy_json.json()["error"]["job_id"] == job_id

    listed = client.get("/api/v1/admin/ingestions", headers=ADMIN).json()["jobs"]
    assert listed[0]["job_id"] == job_id and listed[0]["filename"] == "guideline.pdf"

    done = _wait(client, job_id)
    assert done["state"] == "SUCCESS", done
    report = done["result"]
    assert report["status"] == "ready" and report["activated"] is False
    assert report["counts"]["recommendations"] == 109 and isinstance(report["warnings"], list)
    assert "stale" in report["criteria"] and "unused" in report["criteria"]
    assert report["stale_criteria"] == report["criteria"]["stale"]
    assert {"parse", "upload"} & done["seen_stages"]
    assert not list(setup["uploads"].glob("*"))  # the worker removed the upload; retrieval has its copy

    after = client.get("/api/v1/admin/indexes", headers=ADMIN).json()
    assert after["active_version"] == before["active_version"]  # activate=false
    new = next(v for v in after["versions"] if v["version"] == report["version"])
    assert new["status"] == "ready" and new["has_source_pdf"] and new["source_filename"] == "guideline.pdf"
    assert (
        new["guideline"]["source_sha256"]
        != next(v for v in after["versions"] if v["version"] == after["active_version"])["guideline"][
            "source_sha256"
        ]
    )

    # the claim is released: the next request is accepted; the worker's own PDF is unchanged
    again = client.post("/api/v1/admin/ingestions", json={"activate": False}, headers=ADMIN)
    assert again.status_code == 202, again.text
    unchanged = _wait(client, again.json()["job_id"], 120)
    assert unchanged["state"] == "SUCCESS" and unchanged["result"]["status"] == "unchanged"
    assert unchanged["result"]["version"] == after["active_version"]
    jobs = client.get("/api/v1/admin/ingestions", headers=ADMIN).json()["jobs"]
    assert [j["job_id"] for j in jobs] == [again.json()["job_id"], job_id]


def test_worker_killed_mid_build_leaves_no_half_version(
    setup: dict[str, Any], retrieval_server: RetrievalProcess
) -> None:
    """A worker killed while streaming the source PDF: the build is failed and its data removed at
    once (the stream ended without its `last` piece); the active version keeps serving. (A
    client killed between RPCs is reaped after BUILD_IDLE_TIMEOUT_SECONDS.)"""
    client = setup["client"]
    active = client.get("/api/v1/admin/indexes", headers=ADMIN).json()["active_version"]
    script = setup["tmp"] / "slow_build.py"
    script.write_text(
        "import sys, time, grpc\n"
        "from ng12.retrieval.v1 import retrieval_pb2 as pb, retrieval_pb2_grpc as g\n"
        "stub = g.RetrievalStub(grpc.insecure_channel(sys.argv[1]))\n"
        "v = stub.BeginIndex(pb.BeginIndexRequest(description='killed'), timeout=10).version\n"
        "print(v, flush=True)\n"
        "def parts():\n"
        "    yield pb.UploadSourceRequest(version=v, data=b'%PDF-1.7 part one')\n"
        "    time.sleep(600)\n"
        "stub.UploadSource(parts(), timeout=900)\n",
        encoding="utf-8",
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.Popen(
        [sys.executable, str(script), retrieval_server.addr], stdout=subprocess.PIPE, env=env
    )
    try:
        assert proc.stdout is not None
        version = proc.stdout.readline().decode().strip()
        folder = retrieval_server.chroma_dir / "versions" / version
        deadline = time.monotonic() + 20
        while not (folder / ".source.pdf.part").exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert (folder / ".source.pdf.part").exists()
        proc.kill()
        proc.wait(10)
        record: dict[str, Any] | None = None
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            listed = client.get("/api/v1/admin/indexes", headers=ADMIN).json()
            record = next((v for v in listed["versions"] if v["version"] == version), None)
            if record is None or record["status"] == "failed":
                break
            time.sleep(0.3)
        assert record is None or (record["status"] == "failed" and "cut off" in record["error"]), record
        gone_by = time.monotonic() + 40  # removed right after its status (retried by the maintenance pass)
        while folder.exists() and time.monotonic() < gone_by:
            time.sleep(0.2)
        assert not folder.exists(), sorted(p.name for p in folder.iterdir())
        assert listed["active_version"] == active
    finally:
        if proc.poll() is None:
            proc.kill()


def test_upload_that_cannot_be_stored_is_a_recorded_503(
    make_gateway: Callable[..., TestClient],
    retrieval_addr: str,
    redis_url: str,
    key_prefix: str,
    ng12_pdf: Path,
    tmp_path: Path,
) -> None:
    """UPLOAD_DIR cannot be written (here a regular file stands where its parent folder should be,
    as a missing volume mount can): 503 saying what to check, recorded, and no claim left behind."""
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file, not the uploads volume")
    with make_gateway(retrieval_addr=retrieval_addr, upload_dir=blocker / "uploads") as client:
        reply = _post(client, ng12_pdf.read_bytes(), force="true")
        assert reply.status_code == 503, reply.text
        error = reply.json()["error"]
        assert error["code"] == "upload_storage_unavailable"
        assert "UPLOAD_DIR" in error["message"] and "Not a directory" in error["message"]
        store = client.app.state.audit.store  # type: ignore[attr-defined]
        (record,) = [r for r in store.query(kind="admin") if r.summary.get("action") == "ingestion_upload"]
        assert record.status == 503 and record.summary["error"] == "upload_storage_unavailable"
        assert record.summary["outcome"] == "not_done" and record.summary["filename"] == "guideline.pdf"
    raw = redis.Redis.from_url(redis_url)
    try:
        assert list(raw.scan_iter(match=f"{key_prefix}:jobs*")) == []  # no claim, no job record
    finally:
        raw.close()
