"""deploy/docker-compose.yml and deploy/prometheus.yml agree with deploy/stack_spec.py.

stack_spec.py is the one description of the processes (`make run` starts exactly those); the
compose file runs the same processes in containers. These tests fail when one side changes
without the other: service names, commands (compose `command:` and the image's CMD), environment
key sets, main and metrics ports (environment, EXPOSE, healthcheck, published port), service
addresses and the dependencies they imply, healthcheck kinds, and Prometheus scrape targets.
Every failure message names the service and says what differs.
"""

from __future__ import annotations

import importlib.util
import json
import re
import shlex
import sys
from pathlib import Path
from types import ModuleType
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
DEPLOY = ROOT / "deploy"
COMPOSE_FILE = DEPLOY / "docker-compose.yml"
PROMETHEUS_FILE = DEPLOY / "prometheus.yml"
STACK_SPEC_FILE = DEPLOY / "stack_spec.py"
# Environment keys holding the address of another service, and the service they name.
ADDRESS_KEYS = {
    "RETRIEVAL_ADDR": ("retrieval", "retrieval-pool"),  # the writer, or every retrieval process
    "RETRIEVAL_WRITER_ADDR": ("retrieval",),
    "REDIS_URL": ("redis", "redis-chat"),  # the broker, or (chat) the chat-memory instance
    "SESSION_REDIS_URL": ("redis-chat",),
    "GATEWAY_DATABASE_URL": ("postgres",),
    "ASSESSMENT_URL": ("assessment",),
    "CHAT_URL": ("chat",),
}
INFRA_PORTS = {"redis": 6379, "redis-chat": 6379, "postgres": 5432, "chroma": 8000}
# Host-only address keys: (the key holding the port, the service they name).
HOST_KEYS = {"CHROMA_HOST": ("CHROMA_PORT", "chroma")}
# Network aliases naming a set of processes: the alias, and the stack_spec service whose port and
# health the callers depend on (the writer; the replicas answer on the same alias).
POOL_ALIASES = {"retrieval-pool": "retrieval"}
# Compose services that run a stack_spec service's image again in another role (not built twice).
ROLE_REPLICAS = {"retrieval-replica": ("retrieval", {"INDEX_ROLE": "replica"})}
LISTEN_ALL = "0.0.0.0"


# --------------------------------------------------------------------------------------------
# loading


def _load_stack_spec() -> ModuleType:
    name = "_ng12_stack_spec_under_test"
    spec = importlib.util.spec_from_file_location(name, STACK_SPEC_FILE)
    assert spec is not None and spec.loader is not None, f"cannot import {STACK_SPEC_FILE}"
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses resolve annotations through sys.modules
    spec.loader.exec_module(module)
    return module


STACK = _load_stack_spec()
SPECS: dict[str, Any] = {svc.name: svc for svc in STACK.SERVICES}


def _compose_services() -> dict[str, dict[str, Any]]:
    data = yaml.safe_load(COMPOSE_FILE.read_text(encoding="utf-8"))
    return dict(data.get("services") or {})


def _app_services() -> dict[str, dict[str, Any]]:
    """Compose services built from this repository: the ones stack_spec.py describes."""
    return {name: svc for name, svc in _compose_services().items() if "build" in svc}


def _service(name: str) -> dict[str, Any]:
    services = _app_services()
    if name not in services:
        pytest.fail(f"stack_spec service {name!r} is not an application service in {COMPOSE_FILE.name}")
    return services[name]


def _environment(svc: dict[str, Any]) -> dict[str, str]:
    env = svc.get("environment") or {}
    if isinstance(env, list):
        pairs = (item.split("=", 1) for item in env)
        return {pair[0]: (pair[1] if len(pair) > 1 else "") for pair in pairs}
    return {str(key): str(value) for key, value in env.items()}


def _argv(command: Any) -> list[str]:
    if command is None:
        return []
    if isinstance(command, str):
        return shlex.split(command)
    return [str(part) for part in command]


def _dockerfile_instructions(svc: dict[str, Any]) -> list[tuple[str, str]]:
    build = svc["build"]
    context = (DEPLOY / (build if isinstance(build, str) else build.get("context", "."))).resolve()
    dockerfile = context / ("Dockerfile" if isinstance(build, str) else build.get("dockerfile", "Dockerfile"))
    text = re.sub(r"\\\n", " ", dockerfile.read_text(encoding="utf-8"))
    instructions: list[tuple[str, str]] = []
    for line in text.splitlines():
        stripped = line.strip()
        if stripped and not stripped.startswith("#"):
            keyword, _, rest = stripped.partition(" ")
            instructions.append((keyword.upper(), rest.strip()))
    last_from = max(i for i, (keyword, _) in enumerate(instructions) if keyword == "FROM")
    return instructions[last_from:]


def _container_ports(svc: dict[str, Any]) -> set[int]:
    """Container-side ports of the `ports:` entries (short or long syntax)."""
    ports: set[int] = set()
    for entry in svc.get("ports") or []:
        if isinstance(entry, dict):
            ports.add(int(entry["target"]))
        else:
            target = str(entry).rsplit(":", 1)[-1].split("/", 1)[0]
            ports.add(int(target))
    return ports


def _scrape_targets() -> set[tuple[str, int, str]]:
    """(host, port, metrics_path) of every Prometheus target, static or DNS-discovered."""
    config = yaml.safe_load(PROMETHEUS_FILE.read_text(encoding="utf-8"))
    targets: set[tuple[str, int, str]] = set()
    for job in config.get("scrape_configs") or []:
        path = job.get("metrics_path", "/metrics")
        for static in job.get("static_configs") or []:
            for target in static.get("targets") or []:
                host, _, port = str(target).rpartition(":")
                targets.add((host, int(port), path))
        for dns in job.get("dns_sd_configs") or []:
            for host in dns.get("names") or []:
                if "port" in dns:
                    targets.add((str(host), int(dns["port"]), path))
    return targets


def _address(value: str) -> tuple[str, int | None]:
    """(host, port) of 'host:port' or of a URL (compose's ${SECRET:?...} in it read as a password)."""
    value = re.sub(r"\$\{[^}]*\}", "secret", value)
    if "://" in value:
        parts = urlsplit(value)
        return parts.hostname or "", parts.port
    host, _, port = value.rpartition(":")
    return host, int(port) if port.isdigit() else None


def _metrics_endpoint(name: str) -> tuple[str, int, str]:
    spec = SPECS[name]
    port = spec.metrics_port if spec.metrics_port is not None else spec.port
    assert port is not None, f"stack_spec service {name} has neither a port nor a metrics port"
    return (name, int(port), "/metrics")


# --------------------------------------------------------------------------------------------
# tests


def test_compose_runs_exactly_the_stack_spec_services() -> None:
    compose_names = set(_app_services())
    spec_names = set(SPECS)
    only_compose = sorted(compose_names - spec_names)
    only_spec = sorted(spec_names - compose_names)
    assert not (only_compose or only_spec), (
        f"application services differ: in {COMPOSE_FILE.name} but not stack_spec.py: {only_compose}; "
        f"in stack_spec.py but not {COMPOSE_FILE.name}: {only_spec}"
    )


@pytest.mark.parametrize("name", sorted(SPECS))
def test_command_matches_stack_spec(name: str) -> None:
    expected = ["python", *SPECS[name].command]
    command = _argv(_service(name).get("command"))
    assert command == expected, f"{name}: compose command is {command}, stack_spec says {expected}"


@pytest.mark.parametrize("name", sorted(SPECS))
def test_image_cmd_matches_stack_spec(name: str) -> None:
    expected = ["python", *SPECS[name].command]
    cmds = [args for keyword, args in _dockerfile_instructions(_service(name)) if keyword == "CMD"]
    assert cmds, f"{name}: the image sets no CMD; stack_spec says {expected}"
    cmd = json.loads(cmds[-1]) if cmds[-1].startswith("[") else shlex.split(cmds[-1])
    assert cmd == expected, f"{name}: the image's CMD is {cmd}, stack_spec says {expected}"


@pytest.mark.parametrize("name", sorted(SPECS))
def test_environment_keys_match_stack_spec(name: str) -> None:
    expected = set(STACK.COMMON_ENV) | set(SPECS[name].env)
    actual = set(_environment(_service(name)))
    missing = sorted(expected - actual)
    extra = sorted(actual - expected)
    assert not (missing or extra), (
        f"{name}: environment keys differ: missing in compose (in stack_spec): {missing}; "
        f"extra in compose (not in stack_spec): {extra}"
    )


@pytest.mark.parametrize("name", sorted(SPECS))
def test_ports_match_stack_spec(name: str) -> None:
    spec = SPECS[name]
    svc = _service(name)
    env = _environment(svc)
    problems: list[str] = []
    if spec.port_env is not None and env.get(spec.port_env) != str(spec.port):
        problems.append(
            f"{spec.port_env}={env.get(spec.port_env)!r} in compose, stack_spec port is {spec.port}"
        )
    if spec.metrics_port is not None and env.get("METRICS_PORT") != str(spec.metrics_port):
        problems.append(
            f"METRICS_PORT={env.get('METRICS_PORT')!r} in compose, stack_spec says {spec.metrics_port}"
        )
    if spec.metrics_port is None and "METRICS_PORT" in env:
        problems.append(f"compose sets METRICS_PORT={env['METRICS_PORT']!r}, stack_spec has no metrics port")
    for key in ("HOST", "GRPC_HOST"):
        if key in env and env[key] != LISTEN_ALL:
            problems.append(f"{key}={env[key]!r}: a container must listen on {LISTEN_ALL}")

    expected_ports = {p for p in (spec.port, spec.metrics_port) if p is not None}
    exposed = {
        int(port.split("/", 1)[0])
        for keyword, args in _dockerfile_instructions(svc)
        if keyword == "EXPOSE"
        for port in args.split()
    }
    if exposed != expected_ports:
        problems.append(f"the image EXPOSEs {sorted(exposed)}, stack_spec ports are {sorted(expected_ports)}")

    published = _container_ports(svc)
    if published - {spec.port}:
        problems.append(
            f"compose publishes container ports {sorted(published)}, stack_spec port is {spec.port}"
        )
    assert not problems, f"{name}: " + "; ".join(problems)


def test_gateway_is_published_on_its_stack_spec_port() -> None:
    spec = SPECS["gateway"]
    published = _container_ports(_service("gateway"))
    assert published == {spec.port}, (
        f"gateway publishes container ports {sorted(published)}, expected {spec.port}"
    )


@pytest.mark.parametrize("name", sorted(SPECS))
def test_healthcheck_matches_stack_spec(name: str) -> None:
    spec = SPECS[name]
    test = _argv(_service(name).get("healthcheck", {}).get("test"))
    argv = test[1:] if test[:1] in (["CMD"], ["CMD-SHELL"]) else test
    base = ["python", "-m", "ng12_common.healthcheck"]
    if spec.health == "grpc":
        expected = [*base, "grpc", f"127.0.0.1:{spec.port}"]
    elif spec.health == "heartbeat":  # the file the worker writes (its HEARTBEAT_FILE in compose)
        heartbeat_file = _environment(_service(name)).get("HEARTBEAT_FILE", "(HEARTBEAT_FILE unset)")
        expected = [*base, "heartbeat", heartbeat_file, str(STACK.HEARTBEAT_MAX_AGE_SECONDS)]
    else:
        expected = [*base, "http", f"http://127.0.0.1:{spec.port}/readyz"]
    assert argv == expected, f"{name}: healthcheck is {argv}, stack_spec ({spec.health!r}) implies {expected}"


@pytest.mark.parametrize("name", sorted(SPECS))
def test_service_addresses_and_dependencies_match_stack_spec(name: str) -> None:
    """Each address key names the right service and port, and compose waits for that service."""
    svc = _service(name)
    env = _environment(svc)
    problems: list[str] = []
    expected_deps: set[str] = set()
    for key, targets in ADDRESS_KEYS.items():
        if key not in SPECS[name].env:
            continue
        host, port = _address(env.get(key, ""))
        target = host if host in targets else targets[0]
        service = POOL_ALIASES.get(target, target)
        expected_deps.add(service)
        target_port = INFRA_PORTS[service] if service in INFRA_PORTS else SPECS[service].port
        if (host, port) != (target, target_port):
            problems.append(f"{key}={env.get(key)!r} should address one of {targets} on {target_port}")
    for key, (port_key, target) in HOST_KEYS.items():
        if key not in SPECS[name].env:
            continue
        expected_deps.add(target)
        if (env.get(key), env.get(port_key)) != (target, str(INFRA_PORTS[target])):
            problems.append(
                f"{key}={env.get(key)!r}, {port_key}={env.get(port_key)!r} should address {target} "
                f"on {INFRA_PORTS[target]}"
            )
    depends = svc.get("depends_on") or {}
    actual_deps = set(depends if isinstance(depends, (dict, list)) else [])
    if actual_deps != expected_deps:
        problems.append(
            f"depends_on is {sorted(actual_deps)}, the addresses in stack_spec imply {sorted(expected_deps)} "
            f"(missing: {sorted(expected_deps - actual_deps)}, extra: {sorted(actual_deps - expected_deps)})"
        )
    assert not problems, f"{name}: " + "; ".join(problems)


def test_prometheus_scrapes_every_service_metrics_endpoint() -> None:
    targets = _scrape_targets()
    expected = {_metrics_endpoint(name) for name in SPECS}
    missing = sorted(expected - targets)
    assert not missing, (
        f"{PROMETHEUS_FILE.name} does not scrape (host, port, path): {missing}; it scrapes {sorted(targets)}"
    )
    app_hosts = set(SPECS)
    stray = sorted(t for t in targets if t[0] in app_hosts and t not in expected)
    assert not stray, f"{PROMETHEUS_FILE.name} scrapes endpoints stack_spec does not describe: {stray}"


@pytest.mark.parametrize("name", sorted(ROLE_REPLICAS))
def test_role_replicas_run_their_service_in_another_role(name: str) -> None:
    """retrieval-replica is the retrieval service again (image, command, ports, health, keys and
    values) with only its role changed, and answers on the same pool alias."""
    base_name, overrides = ROLE_REPLICAS[name]
    compose = _compose_services()
    assert name in compose, f"{COMPOSE_FILE.name} has no {name} service"
    replica, base = compose[name], _service(base_name)
    problems: list[str] = []
    if "build" in replica:
        problems.append("builds an image of its own (it should run the one its service builds)")
    for key in ("image", "command", "healthcheck", "volumes", "networks"):
        if replica.get(key) != base.get(key):
            problems.append(f"{key} differs from {base_name}: {replica.get(key)!r} != {base.get(key)!r}")
    env, base_env = _environment(replica), _environment(base)
    expected = {**base_env, **overrides}
    if env != expected:
        diff = sorted(k for k in expected.keys() | env.keys() if env.get(k) != expected.get(k))
        problems.append(f"environment differs from {base_name} (besides {sorted(overrides)}) in {diff}")
    if base_name not in (replica.get("depends_on") or {}):
        problems.append(f"does not wait for {base_name} (the writer) to be healthy")
    aliases = {
        alias
        for svc in (replica, base)
        for net in (svc.get("networks") or {}).values()
        if isinstance(net, dict)
        for alias in net.get("aliases") or []
    }
    if not set(POOL_ALIASES) <= aliases:
        problems.append(f"the pool aliases {sorted(POOL_ALIASES)} are not on both; found {sorted(aliases)}")
    metrics = (name, int(SPECS[base_name].metrics_port), "/metrics")
    if metrics not in _scrape_targets():
        problems.append(f"{PROMETHEUS_FILE.name} does not scrape {metrics}")
    assert not problems, f"{name}: " + "; ".join(problems)
