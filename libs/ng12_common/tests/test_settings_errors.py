"""A configuration error names each bad environment variable, shows the value that is wrong to
help fix it, and never prints a secret: not a secret field's value (SecretStr, secret_fields(),
a name with secret/token/password/key in it), not the password of a URL."""

from __future__ import annotations

import pytest
from pydantic import Field, SecretStr

from ng12_common.settings import ServiceSettings, is_secret_field, load_settings, mask_url_credentials


class ExampleSettings(ServiceSettings):
    database_url: str = Field(default="sqlite:///x.db", pattern=r"^(sqlite|postgresql)://")
    auth_jwt_secret: str = Field(default="", max_length=16)
    api_signing: SecretStr | None = Field(default=None, min_length=40)
    upstream_credential_file: str = Field(default="", max_length=4)
    fallback_pin: str = Field(default="", max_length=4)
    workers: int = Field(default=1, ge=1, le=8)

    @classmethod
    def secret_fields(cls) -> tuple[str, ...]:
        return ("fallback_pin",)


def _error(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], **env: str) -> str:
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    with pytest.raises(SystemExit) as stopped:
        load_settings(ExampleSettings, "example")
    assert stopped.value.code == 2
    return capsys.readouterr().err


def test_a_url_password_is_masked(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    err = _error(monkeypatch, capsys, DATABASE_URL="postgres://ng12:S3CRETPASS@db.internal:5432/ng12")
    assert "DATABASE_URL" in err and "S3CRETPASS" not in err
    assert "postgres://ng12:***@db.internal:5432/ng12" in err  # the rest still helps


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("AUTH_JWT_SECRET", "x" * 20 + "TOPSECRETTAIL"),  # by name: secret
        ("API_SIGNING", "sig-TOPSECRETTAIL"),  # a SecretStr (name without a secret word)
        ("UPSTREAM_CREDENTIAL_FILE", "/run/TOPSECRETTAIL"),  # by name: credential
        ("FALLBACK_PIN", "TOPSECRETTAIL"),  # named by secret_fields()
    ],
)
def test_a_secret_value_is_never_echoed(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], key: str, value: str
) -> None:
    err = _error(monkeypatch, capsys, **{key: value})
    assert key in err and "value not shown" in err
    assert "TOPSECRETTAIL" not in err


def test_other_values_are_shown(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    err = _error(monkeypatch, capsys, WORKERS="99", DATABASE_URL="mysql://db/ng12")
    assert "WORKERS" in err and "'99'" in err
    assert "'mysql://db/ng12'" in err  # no password: nothing to mask


def test_secret_detection_and_masking() -> None:
    assert is_secret_field("retrieval_service_token") and is_secret_field("REDIS_PASSWORD")
    assert is_secret_field("api_signing", ExampleSettings) and not is_secret_field("api_signing")
    assert not is_secret_field("database_url", ExampleSettings)
    assert mask_url_credentials("redis://:pw@redis:6379/0") == "redis://:***@redis:6379/0"
    assert mask_url_credentials("postgresql://u:p@ss/w:rd@h/db") == "postgresql://u:***@h/db"
    assert mask_url_credentials("http://host:8080/path") == "http://host:8080/path"
    assert mask_url_credentials("redis://gateway@redis:6379/0") == "redis://gateway@redis:6379/0"
