"""The bad-input suite: schemathesis generates requests from the gateway's own OpenAPI document
and sends them, with a valid token, to the real gateway (uvicorn) in front of the real assessment
and chat apps and the real retrieval server. No answer may be a 5xx. Fixed seed (derandomized),
bounded examples per operation."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings

from services.gateway.tests.conftest import bearer, live_gateway_settings, serve

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
    """The real gateway served by uvicorn (schemathesis sends real HTTP), limits lifted."""
    from gateway.app import create_app

    unlimited = "1000000/minute"
    with live_gateway_settings(
        retrieval_addr,
        redis_url,
        tmp_path_factory.mktemp("fuzz"),
        rate_limit_user=unlimited,
        rate_limit_ip=unlimited,
        rate_limit_chat=unlimited,
        downstream_timeout_seconds=30,
    ) as settings:
        with serve(create_app(settings)) as url:
            yield url


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
