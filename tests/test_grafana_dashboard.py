"""The Grafana dashboard (deploy/grafana) is provisioned in compose and well formed; the
PromQL of its panels (and of the alert rules) names only metrics that exist, checked against a
live /metrics scrape of every real service in tests/test_e2e_stack.py
(`test_dashboard_and_alert_queries_use_metrics_that_exist`), with the helpers below."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
DASHBOARD = ROOT / "deploy" / "grafana" / "dashboards" / "ng12-overview.json"
ALERTS = ROOT / "deploy" / "prometheus" / "alerts.yml"
METRIC = re.compile(r"\b(ng12_[a-z0-9_]+|ng12:[a-z0-9_:]+)\b")
SUFFIXES = ("", "_total", "_bucket", "_count", "_sum", "_created")
#: Every section the issue asks the dashboard for, and a metric that shows it.
REQUIRED = {
    "RED per service": "ng12_http_requests_total",
    "latency": "ng12_http_request_duration_seconds_bucket",
    "grounding and refusal mix": "ng12_chat_answers_total",
    "top actions": "ng12_assessment_assessments_total",
    "ingestion jobs": "ng12_ingestion_tasks_total",
    "index version": "ng12_retrieval_active_index_version",
}


def dashboard_queries() -> list[str]:
    data = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    return [t["expr"] for p in data["panels"] for t in p.get("targets", [])]


def alert_queries() -> list[str]:
    data = yaml.safe_load(ALERTS.read_text(encoding="utf-8"))
    return [str(r["expr"]) for g in data["groups"] for r in g["rules"]]


def recorded_names() -> set[str]:
    data = yaml.safe_load(ALERTS.read_text(encoding="utf-8"))
    return {r["record"] for g in data["groups"] for r in g["rules"] if "record" in r}


def exposed_names(scrapes: list[str]) -> set[str]:
    """Every sample name a query may use, from /metrics texts (HELP/TYPE lines included, so a
    labelled family with no sample yet still counts)."""
    names: set[str] = set()
    for text in scrapes:
        for line in text.splitlines():
            if line.startswith("# TYPE ") or line.startswith("# HELP "):
                base = line.split()[2]
                names.update(base + suffix for suffix in SUFFIXES)
            elif line and not line.startswith("#"):
                names.add(re.split(r"[{\s]", line, maxsplit=1)[0])
    return names


def unknown_metrics(queries: list[str], exposed: set[str]) -> dict[str, list[str]]:
    recorded = recorded_names()
    missing: dict[str, list[str]] = {}
    for query in queries:
        for name in METRIC.findall(query):
            if name not in exposed and name not in recorded:
                missing.setdefault(name, []).append(query)
    return missing


def test_dashboard_is_well_formed_and_covers_the_required_sections() -> None:
    data: dict[str, Any] = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    assert data["uid"] and data["title"]
    ids = [p["id"] for p in data["panels"]]
    assert len(ids) == len(set(ids)), "panel ids must be unique"
    for panel in data["panels"]:
        if panel["type"] == "row":
            continue
        assert panel["datasource"]["uid"] == "ng12-prometheus", panel["title"]
        assert panel["targets"], f"panel {panel['title']!r} has no query"
        for target in panel["targets"]:
            assert METRIC.search(target["expr"]), f"{panel['title']}: {target['expr']!r} names no ng12 metric"
    queries = " ".join(dashboard_queries())
    missing = [section for section, metric in REQUIRED.items() if metric not in queries]
    assert not missing, f"dashboard lacks: {missing}"


def test_dashboard_is_provisioned_in_compose() -> None:
    compose = yaml.safe_load((ROOT / "deploy" / "docker-compose.yml").read_text(encoding="utf-8"))
    grafana = compose["services"]["grafana"]
    assert "./grafana/dashboards:/var/lib/grafana/dashboards:ro" in grafana["volumes"]
    assert "./grafana/provisioning:/etc/grafana/provisioning:ro" in grafana["volumes"]
    providers = yaml.safe_load(
        (ROOT / "deploy/grafana/provisioning/dashboards/ng12.yml").read_text(encoding="utf-8")
    )
    assert providers["providers"][0]["options"]["path"] == "/var/lib/grafana/dashboards"
    sources = yaml.safe_load(
        (ROOT / "deploy/grafana/provisioning/datasources/prometheus.yml").read_text(encoding="utf-8")
    )
    source = sources["datasources"][0]
    assert source["uid"] == "ng12-prometheus" and source["url"] == "http://prometheus:9090"
    assert set(grafana["networks"]) & set(compose["services"]["prometheus"]["networks"]), (
        "grafana cannot reach prometheus"
    )
    assert grafana["ports"] == ["${GRAFANA_BIND:-127.0.0.1}:3000:3000"], (
        "grafana is published on loopback by default"
    )
