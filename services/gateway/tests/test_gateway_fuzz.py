"""The bad-input suite: schemathesis generates requests from the gateway's own OpenAPI document
and sends them, with a valid token, to the real gateway (uvicorn) in front of the real assessment
and chat apps and the real retrieval server. No answer may be a 5xx. Fixed seed (derandomized),
bounded examples per operation."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
import redis
import schemathesis
from hypothesis import HealthCheck, given, settings

from services.gateway.tests.conftest import REPO, bearer, security_settings, serve

EXAMPLES = 12
# Index-changing and queueing admin operations are left out: they would change the shared test
# retrieval server's active index or queue real ingestions (they are covered by their own tests).
STATEFUL_ADMIN = {
    "POST /api/v1/admin/ingestions",
    "POST /api/v1/admin/indexes/rollback",
    "POST /api/v1/admin/indexes/{version}/activate",
}


@pytest.fixture(scope="module")
def gateway_url(
    retrieval_addr: str, redis_url: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    from assessment.app import create_app as create_assessment
    from assessment.settings import AssessmentSettings
    from chat.app import create_app as create_chat
    from chat.settings import ChatSettings
    from gateway.app import create_app
    from gateway.settings import GatewaySettings

    prefix = f"test:fuzz:{uuid.uuid4().hex}"
    assessment = create_assessment(
        AssessmentSettings(retrieval_addr=retrieval_addr, patients_file=REPO / "data" / "patients.json")
    )
    chat = create_chat(
        ChatSettings(redis_url=redis_url, retrieval_addr=retrieval_addr, chat_key_prefix=prefix)
    )
    with serve(assessment) as a_url, serve(chat) as c_url:
        gateway = create_app(
            GatewaySettings(
                assessment_url=a_url,
                chat_url=c_url,
                retrieval_addr=retrieval_addr,
                redis_url=redis_url,
                frontend_dir=REPO / "frontend",
                job_key_prefix=f"{prefix}:jobs",
                ingestion_queue=f"{prefix}:queue",
                environment="test",
                rate_limit_user="1000000/minute",
                rate_limit_ip="1000000/minute",
                rate_limit_chat="1000000/minute",
                downstream_timeout_seconds=30,
                **security_settings(tmp_path_factory.mktemp("fuzz"), prefix),
            )
        )
        with serve(gateway) as g_url:
            yield g_url
    raw = redis.Redis.from_url(redis_url)
    for key in raw.scan_iter(match=f"{prefix}*"):
        raw.delete(key)
    raw.close()


def _check_operation(
    operation: schemathesis.APIOperation, url: str, headers: dict[str, str], label: str, failures: list[str]
) -> None:
    @given(case=operation.as_strategy())
    @settings(
        max_examples=EXAMPLES,
        derandomize=True,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    def check(case: schemathesis.Case) -> None:
        response = case.call(base_url=url, headers=headers, timeout=60)
        if response.status_code >= 500:
            sent = f"{case.body!r} {case.path_parameters}"
            failures.append(f"{label} -> {response.status_code}: {sent} {response.text[:300]}")

    check()


def _fuzz(url: str, headers: dict[str, str], only_admin: bool) -> list[str]:
    schema = schemathesis.openapi.from_url(f"{url}/openapi.json")
    failures: list[str] = []
    operations = 0
    for result in schema.get_all_operations():
        operation = result.ok()
        label = f"{operation.method.upper()} {operation.path}"
        if label in STATEFUL_ADMIN or operation.path.startswith("/api/v1/admin") != only_admin:
            continue
        operations += 1

        _check_operation(operation, url, headers, label, failures)
    assert operations >= (6 if only_admin else 10), f"only {operations} operations fuzzed"
    return failures


def test_no_5xx_for_generated_requests_as_a_clinician(gateway_url: str) -> None:
    failures = _fuzz(gateway_url, bearer("fuzz-gp", "clinician"), only_admin=False)
    assert not failures, "\n".join(failures[:20])


def test_no_5xx_for_generated_admin_requests(gateway_url: str) -> None:
    failures = _fuzz(gateway_url, bearer("fuzz-admin", "admin"), only_admin=True)
    assert not failures, "\n".join(failures[:20])
