"""Sign-in, roles, OIDC, API keys, session ownership, limits and headers on the real gateway + Redis."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from fastapi.testclient import TestClient

from services.gateway.tests.conftest import JWT_SECRET, bearer, drop_database
from tests.support import free_port

CLINICIAN = bearer("gp-one", "clinician")
OTHER = bearer("gp-two", "clinician")
ADMIN = bearer("boss", "admin")
RECORD = {"age": 55, "gender": "Female", "symptoms": ["cough"]}


# --- tokens and roles ---------------------------------------------------------------------------


def test_no_token_is_401_with_www_authenticate(offline_gateway: TestClient) -> None:
    for method, path in (
        ("GET", "/api/v1/patients"),
        ("POST", "/api/v1/search"),
        ("GET", "/api/v1/chat/sessions"),
    ):
        reply = offline_gateway.request(method, path, json={"query": "x"} if method == "POST" else None)
        assert reply.status_code == 401, path
        assert reply.headers["WWW-Authenticate"].startswith("Bearer")
        assert "/api/v1/auth/token" in reply.json()["error"]["message"]


def test_right_role_passes_wrong_role_403(offline_gateway: TestClient) -> None:
    ok = offline_gateway.get("/api/v1/auth/me", headers=CLINICIAN)
    assert ok.status_code == 200 and ok.json() == {
        "subject": "local:gp-one",
        "roles": ["clinician"],
        "method": "local",
    }
    assert offline_gateway.get("/api/v1/admin/audit", headers=CLINICIAN).status_code == 403
    assert offline_gateway.get("/api/v1/admin/audit", headers=ADMIN).status_code == 200
    no_role = offline_gateway.get("/api/v1/auth/me", headers=bearer("nobody"))
    assert no_role.status_code == 403


def test_expired_tampered_and_foreign_tokens_are_refused(offline_gateway: TestClient) -> None:
    expired = bearer("gp-one", "clinician", ttl=60)
    token = expired["Authorization"].split()[1]
    claims = jwt.decode(token, JWT_SECRET, algorithms=["HS256"], audience="ng12-assessor")
    claims.update(iat=int(time.time()) - 7200, nbf=int(time.time()) - 7200, exp=int(time.time()) - 3600)
    old = jwt.encode(claims, JWT_SECRET, algorithm="HS256")
    reply = offline_gateway.get("/api/v1/auth/me", headers={"Authorization": f"Bearer {old}"})
    assert reply.status_code == 401 and reply.json()["error"]["code"] == "token_expired"

    head, _body, sig = CLINICIAN["Authorization"].split()[1].split(".")
    promoted = jwt.utils.base64url_encode(  # type: ignore[attr-defined]
        json.dumps({**claims, "roles": ["admin"], "exp": int(time.time()) + 600}).encode()
    ).decode()
    for forged in (
        f"{head}.{promoted}.{sig}",  # payload edited, signature kept
        jwt.encode(
            {**claims, "exp": int(time.time()) + 600},
            "another-secret-of-sufficient-length!!",
            algorithm="HS256",
        ),
        jwt.encode({**claims, "exp": int(time.time()) + 600}, None, algorithm="none"),  # type: ignore[arg-type]
        "not-a-jwt",
    ):
        refused = offline_gateway.get("/api/v1/admin/audit", headers={"Authorization": f"Bearer {forged}"})
        assert refused.status_code == 401, forged
        assert refused.json()["error"]["code"] == "token_invalid"


def test_local_sign_in_and_initial_passwords(make_gateway: Callable[..., TestClient], tmp_path: Path) -> None:
    from gateway.security.local_accounts import read_initial_passwords

    with make_gateway() as client:
        auth_dir = tmp_path / "auth"
        mode = stat.S_IMODE((auth_dir / "initial-passwords.txt").stat().st_mode)
        assert mode == 0o600
        passwords = read_initial_passwords(auth_dir)
        assert set(passwords) == {"clinician", "admin"}
        wrong = client.post("/api/v1/auth/token", data={"username": "clinician", "password": "guess"})
        assert wrong.status_code == 401 and wrong.json()["error"]["code"] == "invalid_credentials"
        assert wrong.headers["WWW-Authenticate"].startswith("Bearer")
        good = client.post("/api/v1/auth/token", data={"username": "admin", "password": passwords["admin"]})
        assert good.status_code == 200, good.text
        body = good.json()
        assert body["token_type"] == "bearer" and body["expires_in"] == 900
        headers = {"Authorization": f"Bearer {body['access_token']}"}
        assert client.get("/api/v1/auth/me", headers=headers).json()["roles"] == ["admin"]
        signins = client.get("/api/v1/admin/audit", params={"kind": "signin"}, headers=headers).json()[
            "records"
        ]
        assert [(r["actor"], r["status"]) for r in signins] == [
            ("local:clinician", 401),
            ("local:admin", 200),
        ]
        assert all("guess" not in json.dumps(r) for r in signins)


def test_production_refuses_local_accounts_unless_enabled(tmp_path: Path) -> None:
    from pydantic import ValidationError

    from gateway.settings import GatewaySettings

    base = {
        "assessment_url": "http://a",
        "chat_url": "http://c",
        "retrieval_addr": "r:1",
        "redis_url": "redis://x",
        "environment": "production",
        "auth_jwt_secret": "s" * 40,
        "retrieval_service_token": "t" * 40,
    }
    with pytest.raises(ValidationError, match="OIDC_ISSUER"):
        GatewaySettings(**base)
    assert GatewaySettings(**base, auth_local_accounts=True).local_accounts_enabled
    oidc = GatewaySettings(**base, oidc_issuer="https://idp", oidc_audience="ng12")
    assert not oidc.local_accounts_enabled
    with pytest.raises(ValidationError, match="AUTH_JWT_SECRET"):
        GatewaySettings(**{**base, "auth_jwt_secret": "short"}, auth_local_accounts=True)


def test_oidc_role_map_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """OIDC_ROLE_MAP is a JSON object; empty (the compose and Kubernetes default) is no map."""
    from pydantic import ValidationError

    from gateway.settings import GatewaySettings

    base = {
        "assessment_url": "http://a",
        "chat_url": "http://c",
        "retrieval_addr": "r:1",
        "redis_url": "redis://x",
    }
    monkeypatch.setenv("OIDC_ROLE_MAP", "")
    assert GatewaySettings(**base).oidc_role_map == {}
    monkeypatch.setenv("OIDC_ROLE_MAP", '{"NG12.Clinician": "clinician"}')
    assert GatewaySettings(**base).oidc_role_map == {"NG12.Clinician": "clinician"}
    monkeypatch.setenv("OIDC_ROLE_MAP", "NG12.Clinician=clinician")
    with pytest.raises(ValidationError, match="must be a JSON object"):
        GatewaySettings(**base)


def test_a_bad_configuration_never_prints_a_secret(tmp_path: Path) -> None:
    """`python -m gateway` with a database URL it refuses and an over-long JWT secret: it stops
    naming both variables, with the URL's password masked and the secret not shown at all."""
    env = {
        "PATH": os.environ.get("PATH", ""),
        "ASSESSMENT_URL": "http://127.0.0.1:1",
        "CHAT_URL": "http://127.0.0.1:1",
        "RETRIEVAL_ADDR": "127.0.0.1:1",
        "REDIS_URL": "redis://127.0.0.1:1/0",
        "GATEWAY_DATABASE_URL": "postgres://ng12:S3CRETPASS@postgres:5432/ng12",  # not postgresql://
        "AUTH_JWT_SECRET": "k" * 600 + "SECRETTAIL",  # over max_length
    }
    done = subprocess.run(
        [sys.executable, "-m", "gateway"], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2, done.stderr
    assert "GATEWAY_DATABASE_URL" in done.stderr and "AUTH_JWT_SECRET" in done.stderr
    assert "postgres://ng12:***@postgres:5432/ng12" in done.stderr
    assert "S3CRETPASS" not in done.stderr + done.stdout
    assert "SECRETTAIL" not in done.stderr + done.stdout and "kkkk" not in done.stderr


# --- OIDC against a real JWKS endpoint ------------------------------------------------------------


@pytest.fixture
def oidc_issuer() -> Iterator[tuple[str, Any]]:
    """A local identity provider: discovery document and JWKS over real HTTP; yields (issuer, key)."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(key.public_key()))  # type: ignore[attr-defined]
    jwk.update(kid="test-kid", use="sig", alg="RS256")
    port = free_port()
    issuer = f"http://127.0.0.1:{port}/realms/ng12"

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path.endswith("/.well-known/openid-configuration"):
                payload = {"issuer": issuer, "jwks_uri": f"{issuer}/protocol/openid-connect/certs"}
            elif self.path.endswith("/certs"):
                payload = {"keys": [jwk]}
            else:
                self.send_error(404)
                return
            data = json.dumps(payload).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            pass

    server = HTTPServer(("127.0.0.1", port), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield issuer, key
    server.shutdown()


def _idp_token(issuer: str, key: Any, **overrides: Any) -> str:
    now = int(time.time())
    claims = {
        "iss": issuer,
        "aud": "ng12-api",
        "sub": "u-123",
        "preferred_username": "dr.jones",
        "realm_access": {"roles": ["ng12-gp"]},
        "iat": now,
        "exp": now + 300,
        **overrides,
    }
    return jwt.encode(claims, key, algorithm="RS256", headers={"kid": "test-kid"})


def test_oidc_tokens_verified_against_the_jwks(
    make_gateway: Callable[..., TestClient], oidc_issuer: tuple[str, Any]
) -> None:
    issuer, key = oidc_issuer
    settings = {
        "oidc_issuer": issuer,
        "oidc_audience": "ng12-api",
        "oidc_roles_claim": "realm_access.roles",
        "oidc_role_map": {"ng12-gp": "clinician", "ng12-admin": "admin"},
    }
    with make_gateway(**settings) as client:

        def me(token: str) -> Any:
            return client.get("/api/v1/auth/me", headers={"Authorization": f"Bearer {token}"})

        ok = me(_idp_token(issuer, key))
        assert ok.status_code == 200, ok.text
        # the subject is the immutable `sub`, not the renamable preferred_username
        assert ok.json() == {"subject": "oidc:u-123", "roles": ["clinician"], "method": "oidc"}
        renamed = me(_idp_token(issuer, key, preferred_username="someone.else"))
        assert renamed.json()["subject"] == "oidc:u-123"
        admin = _idp_token(issuer, key, realm_access={"roles": ["ng12-admin"]})
        assert (
            client.get("/api/v1/admin/audit", headers={"Authorization": f"Bearer {admin}"}).status_code == 200
        )
        assert me(_idp_token(issuer, key, aud="another-app")).status_code == 401
        assert me(_idp_token(issuer, key, iss="https://evil.example")).status_code == 401
        assert (
            me(_idp_token(issuer, key, exp=int(time.time()) - 120)).json()["error"]["code"] == "token_expired"
        )
        other_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        assert me(_idp_token(issuer, other_key)).status_code == 401  # signed by someone else
        assert (
            client.get(
                "/api/v1/patients",
                headers={"Authorization": f"Bearer {_idp_token(issuer, key, realm_access={})}"},
            ).status_code
            == 403
        )


def test_oidc_user_claim_is_configurable(
    make_gateway: Callable[..., TestClient], oidc_issuer: tuple[str, Any]
) -> None:
    issuer, key = oidc_issuer
    with make_gateway(
        oidc_issuer=issuer,
        oidc_audience="ng12-api",
        oidc_roles_claim="realm_access.roles",
        oidc_role_map={"ng12-gp": "clinician"},
        oidc_user_claim="preferred_username",
    ) as client:
        token = _idp_token(issuer, key)
        reply = client.get("/api/v1/auth/me", headers={"Authorization": f"Bearer {token}"})
        assert reply.status_code == 200 and reply.json()["subject"] == "oidc:dr.jones"


def test_identity_provider_outage_is_503_not_401(
    make_gateway: Callable[..., TestClient], oidc_issuer: tuple[str, Any]
) -> None:
    """Discovery or JWKS unreachable: the token may be fine, so 503 (retry), never 401 (sign in again)."""
    issuer, key = oidc_issuer
    roles = {"oidc_roles_claim": "realm_access.roles", "oidc_role_map": {"ng12-gp": "clinician"}}
    down_issuer = f"http://127.0.0.1:{free_port()}/realms/ng12"  # nothing listens there
    with make_gateway(oidc_issuer=down_issuer, oidc_audience="ng12-api", **roles) as client:
        token = _idp_token(down_issuer, key)
        reply = client.get("/api/v1/auth/me", headers={"Authorization": f"Bearer {token}"})
        assert reply.status_code == 503, reply.text
        error = reply.json()["error"]
        assert error["code"] == "identity_provider_unavailable"
        assert "discovery document" in error["message"] and "Try again" in error["message"]
        assert reply.headers["Retry-After"] == "5"
    keys_down = f"http://127.0.0.1:{free_port()}/certs"
    with make_gateway(
        oidc_issuer=issuer, oidc_audience="ng12-api", oidc_jwks_url=keys_down, **roles
    ) as client:
        reply = client.get("/api/v1/auth/me", headers={"Authorization": f"Bearer {_idp_token(issuer, key)}"})
        assert reply.status_code == 503, reply.text
        assert reply.json()["error"]["code"] == "identity_provider_unavailable"
        assert "keys" in reply.json()["error"]["message"]
    with make_gateway(oidc_issuer=issuer, oidc_audience="ng12-api", **roles) as client:  # provider up
        other_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        forged = client.get(
            "/api/v1/auth/me", headers={"Authorization": f"Bearer {_idp_token(issuer, other_key)}"}
        )
        assert forged.status_code == 401  # a bad token is still a bad token


# --- API keys ---------------------------------------------------------------------------------------


def test_api_keys_scoped_and_revocable(offline_gateway: TestClient) -> None:
    created = offline_gateway.post(
        "/api/v1/admin/api-keys", json={"name": "EHR integration", "roles": ["service"]}, headers=ADMIN
    )
    assert created.status_code == 201, created.text
    key, key_id = created.json()["api_key"], created.json()["key_id"]
    listed = offline_gateway.get("/api/v1/admin/api-keys", headers=ADMIN).json()
    assert [k["key_id"] for k in listed] == [key_id] and "api_key" not in listed[0]
    as_service = {"X-API-Key": key}
    assert offline_gateway.get("/api/v1/auth/me", headers=as_service).json()["roles"] == ["service"]
    assert offline_gateway.get("/api/v1/admin/audit", headers=as_service).status_code == 403
    stored = offline_gateway.app.state.engine  # type: ignore[attr-defined]
    with stored.connect() as conn:
        row = conn.exec_driver_sql("SELECT key_sha256 FROM api_keys").first()
    assert row is not None and key not in row[0]  # only the hash is stored
    assert offline_gateway.delete(f"/api/v1/admin/api-keys/{key_id}", headers=ADMIN).status_code == 204
    revoked = offline_gateway.get("/api/v1/auth/me", headers=as_service)
    assert revoked.status_code == 401 and revoked.json()["error"]["code"] == "api_key_invalid"
    assert offline_gateway.delete(f"/api/v1/admin/api-keys/{key_id}", headers=ADMIN).status_code == 404


# --- sessions belong to someone -------------------------------------------------------------------


def test_sessions_are_server_made_and_owned(make_gateway: Callable[..., TestClient], chat_url: str) -> None:
    with make_gateway(chat_url=chat_url) as client:
        made = client.post("/api/v1/chat/sessions", headers=CLINICIAN)
        assert made.status_code == 201
        sid = made.json()["session_id"]
        assert len(sid) == 32 and int(sid, 16) >= 0  # 128 random bits
        assert client.get(f"/api/v1/chat/{sid}/history", headers=CLINICIAN).status_code == 200
        for method, path, body in (
            ("GET", f"/api/v1/chat/{sid}/history", None),
            ("POST", "/api/v1/chat", {"session_id": sid, "message": "haemoptysis?"}),
            ("DELETE", f"/api/v1/chat/{sid}", None),
        ):
            stolen = client.request(method, path, json=body, headers=OTHER)
            assert stolen.status_code == 404, (method, stolen.text)
            assert stolen.json()["error"]["code"] == "session_not_found"
        invented = client.post(
            "/api/v1/chat", json={"session_id": "demo", "message": "hi"}, headers=CLINICIAN
        )
        assert invented.status_code == 404
        second = client.post("/api/v1/chat/sessions", headers=CLINICIAN).json()["session_id"]
        mine = client.get("/api/v1/chat/sessions", headers=CLINICIAN).json()["sessions"]
        assert [s["session_id"] for s in mine] == [second, sid]
        assert client.get("/api/v1/chat/sessions", headers=OTHER).json()["sessions"] == []
        assert client.delete(f"/api/v1/chat/{sid}", headers=CLINICIAN).status_code == 204
        assert client.get(f"/api/v1/chat/{sid}/history", headers=CLINICIAN).status_code == 404


# --- abuse limits and headers --------------------------------------------------------------------------


def test_oversized_body_is_413_before_reading(offline_gateway: TestClient) -> None:
    big = json.dumps({**RECORD, "history": ["x" * 900] * 80})
    reply = offline_gateway.post(
        "/api/v1/assess", content=big, headers={**CLINICIAN, "content-type": "application/json"}
    )
    assert reply.status_code == 413 and reply.json()["error"]["code"] == "body_too_large"

    def chunks() -> Iterator[bytes]:  # no Content-Length: counted while streaming
        yield b'{"query": "'
        for _ in range(100):
            yield b"a" * 1000
        yield b'"}'

    streamed = offline_gateway.post(
        "/api/v1/search", content=chunks(), headers={**CLINICIAN, "content-type": "application/json"}
    )
    assert streamed.status_code == 413


def test_rate_limits_429_with_retry_after(make_gateway: Callable[..., TestClient]) -> None:
    with make_gateway(rate_limit_user="3/minute", rate_limit_chat="1/minute") as client:
        codes = [client.get("/api/v1/auth/me", headers=CLINICIAN).status_code for _ in range(4)]
        assert codes == [200, 200, 200, 429]
        limited = client.get("/api/v1/auth/me", headers=CLINICIAN)
        assert 1 <= int(limited.headers["Retry-After"]) <= 60
        assert limited.json()["error"]["code"] == "rate_limited"
        assert client.get("/api/v1/auth/me", headers=OTHER).status_code == 200  # per user
        assert client.post("/api/v1/chat/sessions", headers=OTHER).status_code == 201
        assert client.post("/api/v1/chat/sessions", headers=OTHER).status_code == 429  # chat is tighter
    with make_gateway(rate_limit_ip="2/minute") as client:
        codes = [
            client.get("/api/v1/auth/me", headers=bearer(f"u{i}", "clinician")).status_code for i in range(3)
        ]
        assert codes == [200, 200, 429]  # per IP, whoever signs in


def test_security_headers_everywhere_and_docs_offline(offline_gateway: TestClient) -> None:
    for path in ("/", "/api/v1/patients", "/livez", "/docs", "/openapi.json"):
        reply = offline_gateway.get(path)
        assert reply.headers["X-Content-Type-Options"] == "nosniff", path
        assert reply.headers["Referrer-Policy"] == "no-referrer"
        assert "frame-ancestors 'none'" in reply.headers["Content-Security-Policy"]
    assert "script-src 'self';" in offline_gateway.get("/").headers["Content-Security-Policy"]
    docs = offline_gateway.get("/docs")
    assert docs.status_code == 200 and "/docs-static/swagger-ui-bundle.js" in docs.text
    assert offline_gateway.get("/docs-static/swagger-ui-bundle.js").status_code == 200
    spec = offline_gateway.get("/openapi.json").json()
    assert (
        spec["components"]["securitySchemes"]["OAuth2PasswordBearer"]["flows"]["password"]["tokenUrl"]
        == "/api/v1/auth/token"
    )


def test_metrics_are_not_on_the_public_port(offline_gateway: TestClient) -> None:
    assert offline_gateway.get("/metrics").status_code == 404


def test_cors_off_by_default_and_allow_listed(make_gateway: Callable[..., TestClient]) -> None:
    preflight = {"Origin": "https://ehr.example.nhs.uk", "Access-Control-Request-Method": "POST"}
    with make_gateway() as client:
        assert (
            "access-control-allow-origin" not in client.options("/api/v1/assess", headers=preflight).headers
        )
    with make_gateway(cors_allow_origins="https://ehr.example.nhs.uk") as client:
        reply = client.options("/api/v1/assess", headers=preflight)
        assert reply.headers["access-control-allow-origin"] == "https://ehr.example.nhs.uk"
        other = client.options("/api/v1/assess", headers={**preflight, "Origin": "https://evil.example"})
        assert "access-control-allow-origin" not in other.headers


def test_api_key_while_the_database_is_down_is_503(
    make_gateway: Callable[..., TestClient], postgres_url: str
) -> None:
    """An API key cannot be checked without the gateway database: 503 `auth_unavailable` with
    Retry-After (the key may be fine), not a 500 and not a 401."""
    with make_gateway(gateway_database_url=postgres_url) as client:
        created = client.post(
            "/api/v1/admin/api-keys", json={"name": "EHR", "roles": ["service"]}, headers=bearer("a", "admin")
        )
        assert created.status_code == 201, created.text
        drop_database(postgres_url)
        reply = client.get("/api/v1/auth/me", headers={"X-API-Key": created.json()["api_key"]})
        assert reply.status_code == 503, reply.text
        assert reply.json()["error"]["code"] == "auth_unavailable"
        assert "database is unavailable" in reply.json()["error"]["message"]
        assert reply.headers["Retry-After"] == "5"
        assert client.get("/readyz").status_code == 503  # and the gateway says it is not ready
