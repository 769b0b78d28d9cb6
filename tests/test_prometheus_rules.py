"""deploy/prometheus/alerts.yml is valid and does what it says, checked by Prometheus' own
promtool: `promtool check rules` (syntax, PromQL), `promtool test rules` (the unit tests in
deploy/prometheus/alerts_test.yml: which alerts fire, with which labels and text, on synthetic
series), and `promtool check config` of deploy/prometheus.yml with its rule file.

promtool comes from Debian's `prometheus` package; `make test` installs it when missing
(scripts/ensure_promtool.sh). Without it these tests FAIL (never skip): alerts nobody checked
are worse than none. PROMTOOL may name the binary.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
ALERTS = ROOT / "deploy" / "prometheus" / "alerts.yml"
ALERTS_TEST = ROOT / "deploy" / "prometheus" / "alerts_test.yml"
PROMETHEUS_CONFIG = ROOT / "deploy" / "prometheus.yml"
#: What the issue asks the rules to cover, by alert name.
REQUIRED_ALERTS = {
    "NG12AvailabilityBudgetFastBurn",
    "NG12AvailabilityBudgetSlowBurn",
    "NG12LatencyBudgetFastBurn",
    "NG12LatencyBudgetSlowBurn",
    "NG12ChatRefusalRateAnomaly",
    "NG12AssessmentIncompleteRateAnomaly",
    "NG12IngestionFailed",
    "NG12NoActiveIndex",
    "NG12IndexStale",
    "NG12RedisMemoryHigh",
    "NG12WorkerDown",
    "NG12WorkerHeartbeatStale",
}


def promtool() -> str:
    configured = os.environ.get("PROMTOOL")
    found = configured if configured and os.access(configured, os.X_OK) else shutil.which("promtool")
    if not found:
        pytest.fail(
            "promtool not found: run scripts/ensure_promtool.sh (as root it installs Debian's "
            "`prometheus` package), `apt-get install prometheus`, or set PROMTOOL"
        )
    return found


def _run(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [promtool(), *args], cwd=cwd, capture_output=True, text=True, timeout=300, check=False
    )


def alert_names() -> set[str]:
    data = yaml.safe_load(ALERTS.read_text(encoding="utf-8"))
    return {rule["alert"] for group in data["groups"] for rule in group["rules"] if "alert" in rule}


def test_promtool_check_rules() -> None:
    result = _run("check", "rules", str(ALERTS))
    assert result.returncode == 0, result.stdout + result.stderr


def test_promtool_test_rules() -> None:
    result = _run("test", "rules", str(ALERTS_TEST))
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_required_alert_exists_and_is_unit_tested() -> None:
    names = alert_names()
    assert not REQUIRED_ALERTS - names, (
        f"alerts missing from {ALERTS.name}: {sorted(REQUIRED_ALERTS - names)}"
    )
    tests = yaml.safe_load(ALERTS_TEST.read_text(encoding="utf-8"))
    tested = {
        case["alertname"]
        for group in tests["tests"]
        for case in group.get("alert_rule_test", [])
        if case.get("exp_alerts")
    }
    untested = sorted(names - tested)
    assert not untested, f"alerts no case in {ALERTS_TEST.name} sees firing: {untested}"


def test_every_alert_has_severity_summary_and_runbook_link() -> None:
    data = yaml.safe_load(ALERTS.read_text(encoding="utf-8"))
    problems = []
    for group in data["groups"]:
        for rule in group["rules"]:
            if "alert" not in rule:
                continue
            if rule.get("labels", {}).get("severity") not in {"page", "ticket", "info"}:
                problems.append(f"{rule['alert']}: severity must be page, ticket or info")
            annotations = rule.get("annotations", {})
            if not annotations.get("summary") or "docs/observability.md#" not in annotations.get(
                "description", ""
            ):
                problems.append(
                    f"{rule['alert']}: needs a summary and a description linking docs/observability.md"
                )
    assert not problems, "; ".join(problems)


def test_prometheus_config_loads_the_rules(tmp_path: Path) -> None:
    """promtool check config of the compose Prometheus config, its rule file path pointed here."""
    config = yaml.safe_load(PROMETHEUS_CONFIG.read_text(encoding="utf-8"))
    assert config.get("rule_files") == ["/etc/prometheus/alerts.yml"], config.get("rule_files")
    compose = yaml.safe_load((ROOT / "deploy" / "docker-compose.yml").read_text(encoding="utf-8"))
    mounts = compose["services"]["prometheus"]["volumes"]
    assert "./prometheus/alerts.yml:/etc/prometheus/alerts.yml:ro" in mounts, mounts
    config["rule_files"] = [str(ALERTS)]
    local = tmp_path / "prometheus.yml"
    local.write_text(yaml.safe_dump(config), encoding="utf-8")
    result = _run("check", "config", str(local))
    assert result.returncode == 0, result.stdout + result.stderr
