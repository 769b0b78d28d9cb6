"""`make run` (deploy/run_stack.py) gives each service exactly the keys of deploy/stack_spec.py:
the ones it computes (ports, addresses, paths under VAR_DIR, the service token) always its own,
any other key from the shell when set there (GEMINI_ENABLED=true make run), else the default."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.support import load_launcher, stack_config

LAUNCHER = load_launcher()
STACK = LAUNCHER.stack_spec


def _cfg(tmp_path: Path) -> Any:
    return stack_config(
        LAUNCHER, redis_url="redis://127.0.0.1:6399/3", ng12_pdf=tmp_path / "ng12.pdf", var_dir=tmp_path
    )


def test_shell_values_win_for_keys_the_launcher_does_not_compute(tmp_path: Path) -> None:
    cfg = _cfg(tmp_path)
    shell = {
        "GEMINI_ENABLED": "true",
        "HTTP_WORKERS": "2",
        "OIDC_ISSUER": "https://idp.example",
        "TRUSTED_PROXY_HOPS": "1",
        "UNRELATED": "not a stack_spec key",
    }
    assessment = LAUNCHER.service_env("assessment", cfg, shell)
    gateway = LAUNCHER.service_env("gateway", cfg, shell)
    chat = LAUNCHER.service_env("chat", cfg, shell)
    assert assessment["GEMINI_ENABLED"] == "true" and assessment["HTTP_WORKERS"] == "2"
    assert gateway["OIDC_ISSUER"] == "https://idp.example" and gateway["TRUSTED_PROXY_HOPS"] == "1"
    assert chat["HTTP_WORKERS"] == "2"  # every service that has the key
    assert chat["CHAT_LLM_ENABLED"] == STACK.service("chat").env["CHAT_LLM_ENABLED"]  # not set: default
    for env in (assessment, gateway, chat):
        assert "UNRELATED" not in env  # exactly the spec's keys


def test_the_launchers_own_values_are_never_overridden(tmp_path: Path) -> None:
    cfg = _cfg(tmp_path)
    shell = {
        "PORT": "1",
        "HOST": "0.0.0.0",
        "GRPC_HOST": "0.0.0.0",
        "GRPC_PORT": "2",
        "METRICS_PORT": "3",
        "RETRIEVAL_ADDR": "elsewhere:1",
        "CHROMA_DIR": "/elsewhere",
        "RETRIEVAL_SERVICE_TOKEN": "from-the-shell",
        "GATEWAY_DATABASE_URL": "sqlite:///elsewhere.db",
    }
    gateway = LAUNCHER.service_env("gateway", cfg, shell)
    retrieval = LAUNCHER.service_env("retrieval", cfg, shell)
    assert gateway["PORT"] == str(cfg.gateway_port) and gateway["HOST"] == "127.0.0.1"
    assert gateway["METRICS_PORT"] == str(cfg.gateway_metrics_port)
    assert gateway["RETRIEVAL_ADDR"] == f"127.0.0.1:{cfg.retrieval_port}"
    assert gateway["RETRIEVAL_SERVICE_TOKEN"] == cfg.retrieval_service_token
    assert gateway["GATEWAY_DATABASE_URL"].startswith(f"sqlite:///{tmp_path}")
    assert retrieval["GRPC_HOST"] == "127.0.0.1" and retrieval["GRPC_PORT"] == str(cfg.retrieval_port)
    assert retrieval["CHROMA_DIR"] == str(tmp_path / "chroma")
    assert retrieval["REDIS_URL"] == ""  # one process: no replicas to announce to


def test_the_environment_of_this_process_is_the_default_shell(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GEMINI_ENABLED", "true")
    monkeypatch.delenv("HTTP_WORKERS", raising=False)
    env = LAUNCHER.service_env("assessment", _cfg(tmp_path))
    assert env["GEMINI_ENABLED"] == "true" and env["HTTP_WORKERS"] == "1"
