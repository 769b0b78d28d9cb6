"""End to end: the whole stack as real processes, driven through the gateway.

Real Redis, the real retrieval gRPC server with Chroma in a temp dir, a real Celery worker
that ingests the real NG12 PDF on first start, assessment, chat and the gateway, all started
by the same launcher as `make run` (deploy/run_stack.py). The web app's flows are driven in a real
browser by tests/test_ui_web.py.
"""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pdfplumber
import pytest
import redis

from tests.support import load_launcher, stack_config

pytestmark = pytest.mark.e2e

E2E_REDIS_DB = 13


def _norm(text: str) -> str:
    """Word sequence of a text: verbatim comparison that ignores layout (line breaks, bullets)."""
    return " " + " ".join(re.findall(r"\w+", text.lower())) + " "


@pytest.fixture(scope="module")
def pdf_text(ng12_pdf: Path) -> str:
    with pdfplumber.open(ng12_pdf) as pdf:
        pages = []
        for page in pdf.pages:
            lines = (page.extract_text() or "").splitlines()
            body = [
                ln
                for ln in lines
                if not ln.startswith(
                    (
                        "Suspected cancer: recognition and referral (NG12)",
                        "© NICE",
                        "conditions#notice-of-rights",
                    )
                )
            ]
            pages.append(" ".join(body))
        return _norm(" ".join(pages))


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory, ng12_pdf: Path, redis_url: str) -> Iterator[object]:
    launcher = load_launcher()
    url = re.sub(r"/\d+$", f"/{E2E_REDIS_DB}", redis_url)
    redis.Redis.from_url(url).flushdb()
    cfg = stack_config(
        launcher,
        redis_url=url,
        ng12_pdf=ng12_pdf,
        var_dir=tmp_path_factory.mktemp("stack"),
    )
    s = launcher.Stack(cfg)
    s.start()
    try:
        s.ready_seconds = s.wait_ready(600)
        yield s
    finally:
        s.stop()


def _initial_password(stack, role: str) -> str:  # type: ignore[no-untyped-def]
    from gateway.security.local_accounts import read_initial_passwords

    return read_initial_passwords(stack.cfg.var_dir / "auth")[role]


@pytest.fixture(scope="module")
def api(stack) -> Iterator[httpx.Client]:  # type: ignore[no-untyped-def]
    base = f"http://127.0.0.1:{stack.cfg.gateway_port}"
    with httpx.Client(base_url=base, timeout=30, headers=stack.auth_headers("clinician")) as client:
        yield client


def _session(api: httpx.Client) -> str:
    made = api.post("/api/v1/chat/sessions")
    assert made.status_code == 201, made.text
    return str(made.json()["session_id"])


def _log(stack, name: str) -> str:  # type: ignore[no-untyped-def]
    return (stack.cfg.var_dir / "logs" / f"{name}.log").read_text(encoding="utf-8", errors="replace")


def test_chat_answers_with_verbatim_page_citations(stack, api: httpx.Client, pdf_text: str) -> None:  # type: ignore[no-untyped-def]
    rid = f"e2e-{uuid.uuid4().hex}"
    r = api.post(
        "/api/v1/chat",
        json={
            "session_id": _session(api),
            "message": "When should I refer unexplained haemoptysis?",
            "top_k": 5,
        },
        headers={"X-Request-ID": rid},
    )
    assert r.status_code == 200, r.text
    assert r.headers["X-Request-ID"] == rid
    body = r.json()
    assert body["citations"], body
    for c in body["citations"]:
        assert 1 <= c["page"] <= 95
        assert _norm(c["excerpt"]) in pdf_text, c["excerpt"][:200]
    assert body["guideline"]["index_version"]
    time.sleep(0.5)  # let the log lines be flushed
    for service in ("gateway", "chat", "retrieval"):
        assert rid in _log(stack, service), f"request id missing from {service} logs"


def test_assess_reference_patient_returns_citations(api: httpx.Client, pdf_text: str) -> None:
    r = api.post("/api/v1/assess/PT-101")
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["patient"]["patient_id"] == "PT-101"
    assert body["citations"]
    assert all(_norm(c["excerpt"]) in pdf_text for c in body["citations"])


def test_assess_reads_lay_words_through_the_gateway(api: httpx.Client) -> None:
    """A stored-patient shape is accepted (id and name ignored), lay words are read with their tier,
    and an unread finding makes the assessment incomplete, never no_criteria_met."""
    stored = api.get("/api/v1/patients/PT-101").json()
    edited = {**stored, "symptoms": ["brought up blood when coughing, twice this week"]}
    r = api.post("/api/v1/assess", json=edited)
    assert r.status_code == 200, r.text
    a = r.json()["assessment"]
    assert "1.1.1" in {m["recommendation_id"] for m in a["matched_recommendations"]} and a["complete"]
    assert any(f["concept"] == "haemoptysis" and f["tier"] == "curated" for f in a["findings"])
    unread = api.post(
        "/api/v1/assess", json={"age": 50, "gender": "Male", "symptoms": ["odd tingling in the left elbow"]}
    )
    body = unread.json()["assessment"]
    assert body["top_action"] == "incomplete" and not body["complete"]
    assert any(item["kind"] == "unread_finding" for item in body["needs_review"])


def test_patients_are_listed(api: httpx.Client) -> None:
    r = api.get("/api/v1/patients")
    assert r.status_code == 200
    ids = {p["patient_id"] for p in r.json()}
    assert {f"PT-{n}" for n in range(101, 111)} <= ids


def test_history_survives_chat_restart(stack, api: httpx.Client) -> None:  # type: ignore[no-untyped-def]
    sid = _session(api)
    r = api.post("/api/v1/chat", json={"session_id": sid, "message": "What does NG12 say about dysphagia?"})
    assert r.status_code == 200, r.text
    before = api.get(f"/api/v1/chat/{sid}/history").json()
    assert [t["role"] for t in before["turns"]] == ["user", "assistant"]
    stack.restart_service("chat", 60)
    after = api.get(f"/api/v1/chat/{sid}/history")
    assert after.status_code == 200
    assert after.json()["turns"] == before["turns"]
    assert api.delete(f"/api/v1/chat/{sid}").status_code == 204
    assert api.get(f"/api/v1/chat/{sid}/history").status_code == 404  # the session is gone


@pytest.mark.parametrize(
    ("method", "path", "kwargs", "status", "field"),
    [
        ("post", "/api/v1/assess/PT-999", {}, 404, None),
        ("post", "/api/v1/chat", {"json": {"session_id": "s1", "message": ""}}, 422, "message"),
        ("post", "/api/v1/chat", {"json": {"session_id": "s1", "message": "x" * 20_000}}, 422, "message"),
        ("post", "/api/v1/chat", {"json": {"session_id": "bad id!", "message": "hi"}}, 422, "session_id"),
        (
            "post",
            "/api/v1/chat",
            {"content": b'{"session_id": "s1", "message": ', "headers": {"content-type": "application/json"}},
            422,
            None,
        ),
        ("post", "/api/v1/assess", {"json": {"age": 200, "gender": "Male", "symptoms": []}}, 422, "age"),
    ],
)
def test_bad_input_gets_a_clear_4xx(
    api: httpx.Client,
    method: str,
    path: str,
    kwargs: dict,
    status: int,  # type: ignore[type-arg]
    field: str | None,
) -> None:
    r = getattr(api, method)(path, **kwargs)
    assert r.status_code == status, r.text
    error = r.json()["error"]
    assert error["message"]
    if field:
        assert field in error["message"]
    if status == 404:
        assert "PT-999" in error["message"]


def test_admin_reingestion_creates_and_activates_a_new_version(stack, api: httpx.Client) -> None:  # type: ignore[no-untyped-def]
    assert api.post("/api/v1/admin/ingestions", json={}).status_code == 403  # a clinician
    assert httpx.post(f"{api.base_url}/api/v1/admin/ingestions", json={}).status_code == 401
    headers = stack.auth_headers("admin")
    before = api.get("/api/v1/admin/indexes", headers=headers).json()
    rid = f"e2e-ingest-{uuid.uuid4().hex}"
    # the same PDF again builds nothing unless forced (the worker compares sha256 with the served one)
    r = api.post(
        "/api/v1/admin/ingestions",
        json={"activate": True, "force": True},
        headers={**headers, "X-Request-ID": rid},
    )
    assert r.status_code == 202, r.text
    job_id = r.json()["job_id"]
    deadline = time.monotonic() + 300
    state: dict = {}  # type: ignore[type-arg]
    while time.monotonic() < deadline:
        state = api.get(f"/api/v1/admin/ingestions/{job_id}", headers=headers).json()
        if state["state"] in ("SUCCESS", "FAILURE"):
            break
        time.sleep(1)
    assert state["state"] == "SUCCESS", state
    after = api.get("/api/v1/admin/indexes", headers=headers).json()
    assert "active_version" in after and "active_version" in before, (before, after)
    assert after["active_version"] != before["active_version"]
    r = api.post("/api/v1/chat", json={"session_id": _session(api), "message": "haemoptysis"})
    assert r.json()["guideline"]["index_version"] == after["active_version"]
    # the request id travelled in the Celery task headers into the worker's logs
    assert rid in _log(stack, "ingestion-worker")


def test_every_service_exposes_prometheus_metrics(stack) -> None:  # type: ignore[no-untyped-def]
    cfg = stack.cfg
    assert httpx.get(f"http://127.0.0.1:{cfg.gateway_port}/metrics", timeout=5).status_code == 404
    ports = {
        "gateway": cfg.gateway_metrics_port,
        "assessment": cfg.assessment_port,
        "chat": cfg.chat_port,
        "retrieval": cfg.retrieval_metrics_port,
        "ingestion-worker": cfg.worker_metrics_port,
    }
    for name, port in ports.items():
        body = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text
        assert "ng12_" in body, f"{name} exposes no ng12_ metrics"
    retrieval = httpx.get(f"http://127.0.0.1:{cfg.retrieval_metrics_port}/metrics", timeout=5).text
    assert "ng12_grpc_server_requests_total" in retrieval
    assert "ng12_retrieval_active_index_version" in retrieval


def test_dashboard_and_alert_queries_use_metrics_that_exist(stack) -> None:  # type: ignore[no-untyped-def]
    """Each metric the Grafana dashboard and the alert rules query is exposed by a real service
    (deploy/grafana, deploy/prometheus/alerts.yml; helpers in tests/test_grafana_dashboard.py)."""
    from tests.test_grafana_dashboard import alert_queries, dashboard_queries, exposed_names, unknown_metrics

    cfg = stack.cfg
    ports = (
        cfg.gateway_metrics_port,
        cfg.assessment_port,
        cfg.chat_port,
        cfg.retrieval_metrics_port,
        cfg.worker_metrics_port,
    )
    exposed = exposed_names([httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text for port in ports])
    assert "ng12_http_requests_total" in exposed
    missing = unknown_metrics(dashboard_queries() + alert_queries(), exposed)
    assert not missing, f"queried but exposed by no service: {sorted(missing)}"
    # one HTTP family, a service label per FastAPI service (no per-service families left)
    scraped = " ".join(sorted(exposed))
    for service in ("gateway", "assessment", "chat"):
        assert f"ng12_{service}_http_" not in scraped, f"{service} still has its own HTTP metric family"


def test_retrieval_down_gives_503_within_deadline(stack, api: httpx.Client) -> None:  # type: ignore[no-untyped-def]
    """Chat and search answer 503 within the deadline; assessment answers degraded (rules-only
    from its cached knowledge), also within it."""
    stack.stop_service("retrieval")
    try:
        for path, payload in (
            ("/api/v1/chat", {"session_id": _session(api), "message": "haemoptysis"}),
            ("/api/v1/assess/PT-101", None),
            ("/api/v1/search", {"query": "haemoptysis"}),
        ):
            start = time.monotonic()
            r = api.post(path, json=payload) if payload is not None else api.post(path)
            elapsed = time.monotonic() - start
            if path.startswith("/api/v1/assess"):
                assert r.status_code == 200 and r.json()["degraded"] is True, (path, r.text)
                assert "retrieval" in r.json()["degraded_reason"].lower()
            else:
                assert r.status_code == 503, (path, r.text)
                assert "retrieval" in r.json()["error"]["message"].lower()
            assert elapsed < 10, f"{path} took {elapsed:.1f}s"
    finally:
        stack.start_service("retrieval")
        stack.wait_service("retrieval", 120)
