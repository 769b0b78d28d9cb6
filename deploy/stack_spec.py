"""The one description of the processes that make up NG12 Assessor.

`make run` (deploy/run_stack.py) starts exactly these processes on this machine, and
deploy/docker-compose.yml runs the same services in containers; a parity test
(tests/test_compose_parity.py) checks that the two agree on services, commands, ports and
environment keys. Values here are the local (`make run`) defaults; compose sets its own
values (container paths, service host names) for the same keys.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class ServiceSpec:
    name: str  # compose service name
    command: tuple[str, ...]  # argv after the python interpreter ("-m", module, ...)
    port_env: str | None  # env key holding the main listening port
    port: int | None  # default main port
    metrics_port: int | None  # separate metrics port (retrieval, worker)
    env: dict[str, str] = field(default_factory=dict)  # keys and local defaults
    health: str = "http"  # http (/readyz) | grpc (grpc.health.v1) | heartbeat (HEARTBEAT_FILE age)


#: The worker's liveness probe fails when its heartbeat file is older than this (it is rewritten
#: every 10 s while the consumer turns, or while a task within its time limit runs).
HEARTBEAT_MAX_AGE_SECONDS = 60

COMMON_ENV: dict[str, str] = {
    "ENVIRONMENT": "development",
    "LOG_LEVEL": "INFO",
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "ANONYMIZED_TELEMETRY": "False",
    # OpenTelemetry traces over OTLP/gRPC (ng12_common.tracing): off while empty
    "OTEL_EXPORTER_OTLP_ENDPOINT": "",
}

SERVICES: tuple[ServiceSpec, ...] = (
    ServiceSpec(
        name="retrieval",
        command=("-m", "retrieval"),
        port_env="GRPC_PORT",
        port=50051,
        metrics_port=9101,
        env={
            "GRPC_HOST": "127.0.0.1",
            "GRPC_PORT": "50051",
            "METRICS_PORT": "9101",
            "CHROMA_DIR": "var/chroma",  # the index directory (registry, versions; embedded Chroma)
            "CHROMA_HOST": "",  # empty: embedded Chroma (make run); compose: the chroma server
            "CHROMA_PORT": "8000",
            "INDEX_ROLE": "writer",  # compose also runs read-only replicas (retrieval-replica)
            "REDIS_URL": "",  # index announcements to replicas (pub/sub); none needed for one process
            "REGISTRY_POLL_SECONDS": "5",
            "EMBEDDER": "local",
            "EMBEDDING_THREADS": "1",
            "VERTEX_PROJECT": "",
            "VERTEX_LOCATION": "europe-west2",
            "VERTEX_EMBEDDING_MODEL": "text-embedding-005",
            "VERTEX_EMBEDDING_DIMENSION": "768",
            "GRPC_REFLECTION": "false",
            "RETRIEVAL_SERVICE_TOKEN": "",
            "KEEP_VERSIONS": "3",
        },
        health="grpc",
    ),
    ServiceSpec(
        name="ingestion-worker",
        command=("-m", "ingestion", "worker"),
        port_env=None,
        port=None,
        metrics_port=9102,
        env={
            "REDIS_URL": "redis://127.0.0.1:6379/0",
            "RETRIEVAL_ADDR": "127.0.0.1:50051",
            "METRICS_PORT": "9102",
            "NG12_PDF": "data/ng12.pdf",
            "KB_DIR": "var/kb",
            "INGEST_ON_START": "if_empty",
            "RETRIEVAL_SERVICE_TOKEN": "",
            "UPLOAD_DIR": "var/uploads",
            "HEARTBEAT_FILE": "var/ingestion/heartbeat",
        },
        health="heartbeat",
    ),
    ServiceSpec(
        name="assessment",
        command=("-m", "assessment"),
        port_env="PORT",
        port=8001,
        metrics_port=None,
        env={
            "HOST": "127.0.0.1",
            "PORT": "8001",
            "HTTP_WORKERS": "1",
            "SHUTDOWN_DRAIN_SECONDS": "1",
            "RETRIEVAL_ADDR": "127.0.0.1:50051",
            "PATIENTS_FILE": "data/patients.json",
            "GEMINI_ENABLED": "false",
            "VERTEX_PROJECT": "",
            "VERTEX_LOCATION": "europe-west2",
            "GEMINI_MODEL": "gemini-2.5-flash",
            "LLM_TIMEOUT_SECONDS": "8",
        },
    ),
    ServiceSpec(
        name="chat",
        command=("-m", "chat"),
        port_env="PORT",
        port=8002,
        metrics_port=None,
        env={
            "HOST": "127.0.0.1",
            "PORT": "8002",
            "HTTP_WORKERS": "1",
            "SHUTDOWN_DRAIN_SECONDS": "1",
            "REDIS_URL": "redis://127.0.0.1:6379/0",
            "RETRIEVAL_ADDR": "127.0.0.1:50051",
            "CHAT_HISTORY_TTL_SECONDS": "86400",
            "CHAT_MAX_TURNS": "50",
            "CHAT_LLM_ENABLED": "false",
            "CHAT_LLM_MODEL": "gemini-2.5-flash",
            "CHAT_LLM_TIMEOUT_SECONDS": "8",
            "VERTEX_PROJECT": "",
            "VERTEX_LOCATION": "europe-west2",
        },
    ),
    ServiceSpec(
        name="gateway",
        command=("-m", "gateway"),
        port_env="PORT",
        port=8000,
        metrics_port=9100,
        env={
            "HOST": "127.0.0.1",
            "PORT": "8000",
            "HTTP_WORKERS": "1",
            "SHUTDOWN_DRAIN_SECONDS": "1",
            "ASSESSMENT_URL": "http://127.0.0.1:8001",
            "CHAT_URL": "http://127.0.0.1:8002",
            "RETRIEVAL_ADDR": "127.0.0.1:50051",
            "RETRIEVAL_WRITER_ADDR": "",  # empty: RETRIEVAL_ADDR; compose: the writer (retrieval)
            "REDIS_URL": "redis://127.0.0.1:6379/0",
            "SESSION_REDIS_URL": "",
            "METRICS_PORT": "9100",
            "FRONTEND_DIR": "frontend",
            "AUTH_DIR": "var/auth",
            "AUTH_JWT_SECRET": "",
            "AUTH_LOCAL_ACCOUNTS": "true",
            "OIDC_ISSUER": "",
            "OIDC_AUDIENCE": "",
            "OIDC_ROLES_CLAIM": "roles",
            "OIDC_USER_CLAIM": "sub",
            "OIDC_ROLE_MAP": "",  # JSON object; empty: the provider's role names are ours
            "OIDC_JWKS_URL": "",  # empty: from the issuer's discovery document
            "GATEWAY_DATABASE_URL": "sqlite:///var/gateway/gateway.sqlite3",
            "AUDIT_RETENTION_DAYS": "3650",
            "RATE_LIMIT_USER": "300/minute",
            "RATE_LIMIT_CHAT": "30/minute",
            "RATE_LIMIT_INGESTION": "10/hour",
            "CORS_ALLOW_ORIGINS": "",
            "TRUSTED_PROXY_HOPS": "0",  # make run: no proxy; compose and Kubernetes: 1 (TLS proxy in front)
            "RETRIEVAL_SERVICE_TOKEN": "",
            "UPLOAD_DIR": "var/uploads",
        },
    ),
)


def service(name: str) -> ServiceSpec:
    for spec in SERVICES:
        if spec.name == name:
            return spec
    raise KeyError(name)
