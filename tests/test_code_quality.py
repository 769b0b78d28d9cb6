"""The code base stays ruff-clean and mypy-clean (run as part of `make test`)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.support import REPO

BIN = Path(sys.executable).parent


def test_ruff_finds_nothing() -> None:
    result = subprocess.run([str(BIN / "ruff"), "check", "."], cwd=REPO, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout[-4000:]


def test_mypy_finds_nothing() -> None:
    sources = [
        "libs/ng12_common/src/ng12_common",
        *sorted(str(p) for p in REPO.glob("services/*/src")),
        *sorted(str(p.relative_to(REPO)) for p in [*REPO.glob("deploy/*.py"), *REPO.glob("bench/*.py")]),
    ]
    result = subprocess.run(
        [sys.executable, "-m", "mypy", *sources], cwd=REPO, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout[-4000:]
