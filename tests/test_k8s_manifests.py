"""deploy/k8s: every rendered manifest is valid Kubernetes, and the manifests agree with
deploy/stack_spec.py as deploy/docker-compose.yml does (tests/test_compose_parity.py).

Validation: `kubernetes-validate` (pinned in constraints.txt) against the schemas of Kubernetes
KUBERNETES_VERSION, which ship inside its wheel: no network. Strict mode, so an unknown or
misspelt field fails.

Rendering: kustomize is not a Python package and may not be installed, so overlays are rendered
here by a small merge that implements exactly the kustomize features the overlays use:
`resources` (files, or directories with their own kustomization.yaml), `namespace` (set on every
namespaced object), `images` (newName/newTag by image name) and `patches` with a `path` (a
strategic-merge patch matched by kind and name: mappings merge key by key, lists of mappings that
all have a `name` merge item by item on it, any other value replaces). When `kubectl` is present
its `kubectl kustomize` output must equal ours, so the merge cannot drift from the real thing.

Parity, per service of stack_spec.py: a Deployment or StatefulSet of that name runs the same
command and image as compose, sets exactly the environment keys stack_spec lists (plus Secret
helpers that other values expand as $(NAME)), listens on and exposes the same ports through a
Service, and probes what compose probes (/readyz and /livez, gRPC health, the heartbeat file).
"""

from __future__ import annotations

import copy
import importlib.util
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import kubernetes_validate
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
K8S = ROOT / "deploy" / "k8s"
OVERLAYS = ("dev", "production")
KUBERNETES_VERSION = "1.32.0"
CLUSTER_SCOPED = {"Namespace", "ClusterRole", "ClusterRoleBinding", "PersistentVolume", "StorageClass"}
HTTP_WITH_HPA = ("gateway", "assessment", "chat")
DATA_STORES = {
    "redis": ("gateway", "ingestion-worker", "retrieval"),  # retrieval: index announcements only
    "redis-chat": ("chat", "gateway"),
    "postgres": ("gateway",),
}
RETRIEVAL_CLIENTS = ("gateway", "assessment", "chat", "ingestion-worker")


def _load_stack_spec() -> ModuleType:
    name = "_ng12_stack_spec_k8s"
    spec = importlib.util.spec_from_file_location(name, ROOT / "deploy" / "stack_spec.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


STACK = _load_stack_spec()
SPECS: dict[str, Any] = {svc.name: svc for svc in STACK.SERVICES}
COMPOSE = yaml.safe_load((ROOT / "deploy" / "docker-compose.yml").read_text(encoding="utf-8"))["services"]


# --------------------------------------------------------------------------------------------
# rendering (the small kustomize)


def _merge(base: Any, patch: Any) -> Any:
    if isinstance(base, dict) and isinstance(patch, dict):
        out = dict(base)
        for key, value in patch.items():
            out[key] = _merge(base[key], value) if key in base else copy.deepcopy(value)
        return out
    if (
        isinstance(base, list)
        and isinstance(patch, list)
        and all(isinstance(i, dict) and "name" in i for i in base + patch)
    ):
        out_list = [copy.deepcopy(i) for i in base]
        for item in patch:
            match = next((i for i, b in enumerate(out_list) if b["name"] == item["name"]), None)
            if match is None:
                out_list.append(copy.deepcopy(item))
            else:
                out_list[match] = _merge(out_list[match], item)
        return out_list
    return copy.deepcopy(patch)


def _docs(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text(encoding="utf-8")) if d]


def render(directory: Path) -> list[dict[str, Any]]:
    kustomization = yaml.safe_load((directory / "kustomization.yaml").read_text(encoding="utf-8"))
    known = {"apiVersion", "kind", "resources", "namespace", "images", "patches"}
    unknown = set(kustomization) - known
    assert not unknown, (
        f"{directory}: kustomization uses {sorted(unknown)}, which this test's merge does not implement"
    )
    objects: list[dict[str, Any]] = []
    for entry in kustomization.get("resources", []):
        target = (directory / entry).resolve()
        objects += render(target) if target.is_dir() else _docs(target)
    for patch_entry in kustomization.get("patches", []):
        assert set(patch_entry) == {"path"}, f"{directory}: only `patches: - path:` is implemented"
        for patch in _docs(directory / patch_entry["path"]):
            index = next(
                (
                    i
                    for i, o in enumerate(objects)
                    if o["kind"] == patch["kind"] and o["metadata"]["name"] == patch["metadata"]["name"]
                ),
                None,
            )
            assert index is not None, (
                f"{directory}: patch for missing {patch['kind']}/{patch['metadata']['name']}"
            )
            objects[index] = _merge(objects[index], patch)
    images = {i["name"]: i for i in kustomization.get("images", [])}
    for obj in objects:
        for container in _pod_spec(obj).get("containers", []) if _pod_spec(obj) else []:
            name, _, tag = container["image"].partition(":")
            if name in images:
                rule = images[name]
                container["image"] = f"{rule.get('newName', name)}:{rule.get('newTag', tag)}"
        if "namespace" in kustomization and obj["kind"] not in CLUSTER_SCOPED:
            obj["metadata"]["namespace"] = kustomization["namespace"]
    return objects


def _pod_spec(obj: dict[str, Any]) -> dict[str, Any] | None:
    if obj["kind"] in {"Deployment", "StatefulSet"}:
        spec: dict[str, Any] = obj["spec"]["template"]["spec"]
        return spec
    return None


RENDERED = {overlay: render(K8S / "overlays" / overlay) for overlay in OVERLAYS}


def _find(objects: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    for obj in objects:
        if obj["kind"] == kind and obj["metadata"]["name"] == name:
            return obj
    pytest.fail(f"no {kind}/{name} in the rendered manifests")


def _workload(objects: list[dict[str, Any]], name: str) -> dict[str, Any]:
    for obj in objects:
        if obj["kind"] in {"Deployment", "StatefulSet"} and obj["metadata"]["name"] == name:
            return obj
    pytest.fail(f"no Deployment or StatefulSet {name!r} in the rendered manifests")


def _container(objects: list[dict[str, Any]], name: str) -> dict[str, Any]:
    containers = _workload(objects, name)["spec"]["template"]["spec"]["containers"]
    assert len(containers) == 1, f"{name}: expected one container"
    container: dict[str, Any] = containers[0]
    return container


# --------------------------------------------------------------------------------------------
# validity


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_every_rendered_manifest_is_valid_kubernetes(overlay: str) -> None:
    problems = []
    for obj in RENDERED[overlay]:
        try:
            kubernetes_validate.validate(obj, KUBERNETES_VERSION, strict=True)
        except kubernetes_validate.ValidationError as exc:
            problems.append(f"{obj['kind']}/{obj['metadata']['name']}: {exc.message} at {list(exc.path)}")
    assert not problems, "\n".join(problems)


def test_every_manifest_file_is_valid_kubernetes() -> None:
    """Patches aside, each file under deploy/k8s holds complete, valid objects."""
    problems = []
    for path in sorted(K8S.rglob("*.yaml")):
        if path.name == "kustomization.yaml" or path.parent.parent.name == "overlays":
            continue
        for obj in _docs(path):
            try:
                kubernetes_validate.validate(obj, KUBERNETES_VERSION, strict=True)
            except kubernetes_validate.ValidationError as exc:
                problems.append(f"{path.relative_to(ROOT)} {obj.get('kind')}: {exc.message}")
    assert not problems, "\n".join(problems)


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl absent: the merge above is the renderer")
@pytest.mark.parametrize("overlay", OVERLAYS)
def test_our_render_matches_kubectl_kustomize(overlay: str) -> None:
    result = subprocess.run(
        ["kubectl", "kustomize", str(K8S / "overlays" / overlay)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    theirs = {(o["kind"], o["metadata"]["name"]): o for o in yaml.safe_load_all(result.stdout) if o}
    ours = {(o["kind"], o["metadata"]["name"]): o for o in RENDERED[overlay]}
    assert set(theirs) == set(ours)
    different = sorted(f"{k[0]}/{k[1]}" for k in ours if _canonical(ours[k]) != _canonical(theirs[k]))
    assert not different, f"our render differs from kubectl kustomize for {different}"


def _canonical(obj: Any) -> Any:
    """Order-insensitive for lists of named items (kustomize may reorder merged env entries)."""
    if isinstance(obj, dict):
        return {k: _canonical(v) for k, v in obj.items()}
    if isinstance(obj, list) and all(isinstance(i, dict) and "name" in i for i in obj):
        return sorted((_canonical(i) for i in obj), key=lambda i: str(i["name"]))
    if isinstance(obj, list):
        return [_canonical(i) for i in obj]
    return obj


# --------------------------------------------------------------------------------------------
# parity with stack_spec.py (and compose)


@pytest.mark.parametrize("overlay", OVERLAYS)
@pytest.mark.parametrize("name", sorted(SPECS))
def test_command_and_image_match_compose(overlay: str, name: str) -> None:
    container = _container(RENDERED[overlay], name)
    assert container["command"] == ["python", *SPECS[name].command], f"{name}: command {container['command']}"
    compose_image = re.sub(r"\$\{[^}]*:-([^}]*)\}", r"\1", COMPOSE[name]["image"])  # ng12-assessor/x:latest
    repository = compose_image.split(":", 1)[0].split("/", 1)[1]
    assert container["image"].split(":", 1)[0].endswith(f"/{repository}"), (
        f"{name}: image {container['image']} is not the compose image {compose_image}"
    )


@pytest.mark.parametrize("overlay", OVERLAYS)
@pytest.mark.parametrize("name", sorted(SPECS))
def test_environment_keys_match_stack_spec(overlay: str, name: str) -> None:
    env = _container(RENDERED[overlay], name)["env"]
    keys = [e["name"] for e in env]
    assert len(keys) == len(set(keys)), f"{name}: duplicated env keys {keys}"
    expected = set(STACK.COMMON_ENV) | set(SPECS[name].env)
    values = " ".join(str(e.get("value", "")) for e in env)
    helpers = {
        e["name"]
        for e in env
        if "valueFrom" in e and e["name"] not in expected and f"$({e['name']})" in values
    }
    actual = set(keys) - helpers
    assert actual == expected, (
        f"{name}: env keys differ from stack_spec: missing {sorted(expected - actual)}, "
        f"extra {sorted(actual - expected)}"
    )
    for helper in helpers:  # a helper is defined before the values that expand it
        first_use = min(i for i, e in enumerate(env) if f"$({helper})" in str(e.get("value", "")))
        assert keys.index(helper) < first_use, f"{name}: {helper} must come before its first use"


@pytest.mark.parametrize("overlay", OVERLAYS)
@pytest.mark.parametrize("name", sorted(SPECS))
def test_ports_and_service_match_stack_spec(overlay: str, name: str) -> None:
    spec = SPECS[name]
    objects = RENDERED[overlay]
    container = _container(objects, name)
    env = {e["name"]: e.get("value") for e in container["env"]}
    expected = {p for p in (spec.port, spec.metrics_port) if p is not None}
    assert {p["containerPort"] for p in container["ports"]} == expected, f"{name}: container ports"
    if spec.port_env is not None:
        assert env[spec.port_env] == str(spec.port), f"{name}: {spec.port_env}"
    if spec.metrics_port is not None:
        assert env["METRICS_PORT"] == str(spec.metrics_port), f"{name}: METRICS_PORT"
    for key in ("HOST", "GRPC_HOST"):
        if key in env:
            assert env[key] == "0.0.0.0", f"{name}: {key} must be 0.0.0.0 in a pod"
    service = _find(objects, "Service", name)
    assert {p["port"] for p in service["spec"]["ports"]} == expected, f"{name}: Service ports"
    assert service["spec"]["selector"] == _workload(objects, name)["spec"]["selector"]["matchLabels"]


@pytest.mark.parametrize("overlay", OVERLAYS)
@pytest.mark.parametrize("name", sorted(SPECS))
def test_addresses_name_the_kubernetes_services(overlay: str, name: str) -> None:
    env = {e["name"]: str(e.get("value", "")) for e in _container(RENDERED[overlay], name)["env"]}
    compose_env = {k: str(v) for k, v in (COMPOSE[name].get("environment") or {}).items()}
    for key in (
        "RETRIEVAL_ADDR",
        "RETRIEVAL_WRITER_ADDR",
        "CHROMA_HOST",
        "ASSESSMENT_URL",
        "CHAT_URL",
        "REDIS_URL",
        "SESSION_REDIS_URL",
        "GATEWAY_DATABASE_URL",
    ):
        if key not in SPECS[name].env:
            continue
        host = re.sub(r"\$\{[^}]*\}|\$\([^)]*\)", "x", compose_env[key])
        ours = re.sub(r"\$\{[^}]*\}|\$\([^)]*\)", "x", env[key])
        assert ours == host, f"{name}: {key}={env[key]!r}, compose says {compose_env[key]!r}"


@pytest.mark.parametrize("overlay", OVERLAYS)
@pytest.mark.parametrize("name", sorted(SPECS))
def test_probes_match_stack_spec(overlay: str, name: str) -> None:
    spec = SPECS[name]
    container = _container(RENDERED[overlay], name)
    env = {e["name"]: e.get("value") for e in container["env"]}
    liveness, readiness = container.get("livenessProbe"), container.get("readinessProbe")
    assert liveness, f"{name}: no livenessProbe"
    if spec.health == "http":
        assert readiness and readiness["httpGet"] == {"path": "/readyz", "port": spec.port}, (
            f"{name}: readiness"
        )
        assert liveness["httpGet"] == {"path": "/livez", "port": spec.port}, f"{name}: liveness"
    elif spec.health == "grpc":
        assert readiness and readiness["grpc"] == {"port": spec.port}, f"{name}: readiness"
        assert liveness["grpc"] == {"port": spec.port}, f"{name}: liveness"
    else:
        expected = [
            "python", "-m", "ng12_common.healthcheck", "heartbeat",
            env["HEARTBEAT_FILE"], str(STACK.HEARTBEAT_MAX_AGE_SECONDS),
        ]  # fmt: skip
        assert liveness["exec"]["command"] == expected, f"{name}: liveness must read the heartbeat file"


# --------------------------------------------------------------------------------------------
# hardening, availability, network


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_pods_run_non_root_with_read_only_root_and_limits(overlay: str) -> None:
    problems = []
    for obj in RENDERED[overlay]:
        pod = _pod_spec(obj)
        if pod is None:
            continue
        name = obj["metadata"]["name"]
        if not pod.get("securityContext", {}).get("runAsNonRoot"):
            problems.append(f"{name}: runAsNonRoot")
        if pod.get("automountServiceAccountToken") is not False:
            problems.append(f"{name}: automountServiceAccountToken must be false")
        for c in pod["containers"]:
            sc = c.get("securityContext", {})
            if (
                sc.get("readOnlyRootFilesystem") is not True
                or sc.get("allowPrivilegeEscalation") is not False
            ):
                problems.append(f"{name}/{c['name']}: read-only root, no privilege escalation")
            if sc.get("capabilities", {}).get("drop") != ["ALL"]:
                problems.append(f"{name}/{c['name']}: drop ALL capabilities")
            resources = c.get("resources", {})
            if "memory" not in resources.get("limits", {}) or not {"cpu", "memory"} <= set(
                resources.get("requests", {})
            ):
                problems.append(f"{name}/{c['name']}: cpu/memory requests and a memory limit")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_secrets_are_referenced_never_inlined(overlay: str) -> None:
    objects = RENDERED[overlay]
    assert not [o for o in objects if o["kind"] == "Secret"], "a Secret is inlined in the manifests"
    secretish = re.compile(r"(SECRET|TOKEN|PASSWORD)$")
    problems = []
    for obj in objects:
        pod = _pod_spec(obj)
        for c in pod["containers"] if pod else []:
            for e in c.get("env", []):
                if secretish.search(e["name"]) and "valueFrom" not in e:
                    problems.append(f"{obj['metadata']['name']}: {e['name']} has an inline value")
                ref = e.get("valueFrom", {}).get("secretKeyRef")
                if ref and ref != {"name": "ng12-secrets", "key": e["name"]}:
                    problems.append(
                        f"{obj['metadata']['name']}: {e['name']} should come from ng12-secrets/{e['name']}"
                    )
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("overlay", OVERLAYS)
@pytest.mark.parametrize("name", HTTP_WITH_HPA)
def test_http_services_have_a_pdb_and_an_hpa(overlay: str, name: str) -> None:
    objects = RENDERED[overlay]
    pdb = _find(objects, "PodDisruptionBudget", name)
    assert (
        pdb["spec"]["selector"]["matchLabels"] == _workload(objects, name)["spec"]["selector"]["matchLabels"]
    )
    hpa = _find(objects, "HorizontalPodAutoscaler", name)
    assert hpa["spec"]["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": name}
    assert 1 <= hpa["spec"]["minReplicas"] <= hpa["spec"]["maxReplicas"]
    if overlay == "production":
        assert hpa["spec"]["minReplicas"] >= 2 and pdb["spec"]["minAvailable"] >= 1, f"{name}: production HA"


def _policies(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [o for o in objects if o["kind"] == "NetworkPolicy"]


def _allowed_sources(objects: list[dict[str, Any]], target: str, port: int) -> set[str] | None:
    """Apps that may reach `target` on `port`; None means anyone."""
    sources: set[str] = set()
    for policy in _policies(objects):
        selector = policy["spec"]["podSelector"].get("matchLabels", {})
        if selector and selector.get("app.kubernetes.io/name") != target:
            continue
        for rule in policy["spec"].get("ingress", []):
            if rule.get("ports") and port not in {p["port"] for p in rule["ports"]}:
                continue
            if "from" not in rule:
                return None
            for peer in rule["from"]:
                name = peer.get("podSelector", {}).get("matchLabels", {}).get("app.kubernetes.io/name")
                if "namespaceSelector" in peer:
                    name = f"{name}@other-namespace"
                sources.add(str(name))
    return sources


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_network_policies_only_the_gateway_takes_ingress(overlay: str) -> None:
    objects = RENDERED[overlay]
    deny = [
        p for p in _policies(objects) if p["spec"]["podSelector"] == {} and p["spec"].get("ingress") == []
    ]
    assert deny, "no default-deny ingress policy"
    assert _allowed_sources(objects, "gateway", 8000) is None, "the gateway's public port must be open"
    for name in ("assessment", "chat"):
        assert _allowed_sources(objects, name, SPECS[name].port) == {
            "gateway",
            "prometheus@other-namespace",
        }, name
    assert _allowed_sources(objects, "retrieval", 50051) == set(RETRIEVAL_CLIENTS)
    assert _allowed_sources(objects, "chroma", 8000) == {"retrieval"}
    for store, clients in DATA_STORES.items():
        port = 5432 if store == "postgres" else 6379
        assert _allowed_sources(objects, store, port) == set(clients), store
    for name, spec in SPECS.items():
        if spec.metrics_port is not None and name != "gateway":
            assert _allowed_sources(objects, name, spec.metrics_port) == {"prometheus@other-namespace"}, name
    assert _allowed_sources(objects, "gateway", 9100) == {"prometheus@other-namespace"}


# --------------------------------------------------------------------------------------------
# retrieval replicas


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_retrieval_replicas_are_the_writer_in_another_role(overlay: str) -> None:
    """retrieval-replica runs the writer's container with INDEX_ROLE=replica; one writer pod; the
    headless retrieval-pool Service spans writer and replicas; the Chroma server is one pod that
    only retrieval reads; writer and replicas share the ReadWriteMany index claim."""
    objects = RENDERED[overlay]
    writer, replica = _workload(objects, "retrieval"), _workload(objects, "retrieval-replica")
    assert writer["kind"] == "StatefulSet" and writer["spec"]["replicas"] == 1, "exactly one writer"
    assert replica["kind"] == "Deployment" and replica["spec"]["replicas"] >= 1
    w, r = _container(objects, "retrieval"), _container(objects, "retrieval-replica")
    w_env = {e["name"]: e for e in w["env"]}
    r_env = {e["name"]: e for e in r["env"]}
    assert w_env["INDEX_ROLE"]["value"] == "writer" and r_env["INDEX_ROLE"]["value"] == "replica"
    assert {k: v for k, v in r_env.items() if k != "INDEX_ROLE"} == {
        k: v for k, v in w_env.items() if k != "INDEX_ROLE"
    }, "replica env differs from the writer's beyond INDEX_ROLE"
    for key in ("image", "command", "ports", "readinessProbe", "livenessProbe", "volumeMounts"):
        assert w[key] == r[key], f"retrieval-replica {key} differs from the writer's"
    pool = _find(objects, "Service", "retrieval-pool")
    assert pool["spec"].get("clusterIP") == "None", "retrieval-pool must be headless (one record per pod)"
    for workload in (writer, replica):
        labels = workload["spec"]["template"]["metadata"]["labels"]
        assert pool["spec"]["selector"].items() <= labels.items(), "retrieval-pool must select every pod"
        claims = {
            v["persistentVolumeClaim"]["claimName"]
            for v in workload["spec"]["template"]["spec"]["volumes"]
            if "persistentVolumeClaim" in v
        }
        assert claims == {"ng12-index"}, claims
    index = _find(objects, "PersistentVolumeClaim", "ng12-index")
    assert index["spec"]["accessModes"] == ["ReadWriteMany"]
    pdb = _find(objects, "PodDisruptionBudget", "retrieval-replica")
    assert pdb["spec"]["selector"]["matchLabels"] == replica["spec"]["selector"]["matchLabels"]
    chroma = _workload(objects, "chroma")
    assert chroma["kind"] == "StatefulSet" and chroma["spec"]["replicas"] == 1
    assert _container(objects, "chroma")["image"] == w["image"], "chroma runs the retrieval image's CLI"
    assert {p["port"] for p in _find(objects, "Service", "chroma")["spec"]["ports"]} == {
        int(w_env["CHROMA_PORT"]["value"])
    }
    compose_writer = {k: str(v) for k, v in COMPOSE["retrieval"]["environment"].items()}
    assert w_env["CHROMA_HOST"]["value"] == compose_writer["CHROMA_HOST"] == "chroma"
    assert COMPOSE["retrieval-replica"]["environment"]["INDEX_ROLE"] == "replica"
