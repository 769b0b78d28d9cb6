"""The committed gRPC stubs are exactly what the pinned grpcio-tools generates from proto/."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.support import REPO

GENERATED = ("retrieval_pb2.py", "retrieval_pb2.pyi", "retrieval_pb2_grpc.py")


def test_regenerating_the_stubs_changes_nothing(tmp_path: Path) -> None:
    env_python = {"PYTHON": sys.executable}
    subprocess.run(
        ["bash", str(REPO / "scripts/gen_proto.sh"), str(tmp_path)],
        check=True,
        cwd=REPO,
        env={**env_python, "PATH": "/usr/bin:/bin"},
    )
    committed = REPO / "libs/ng12_common/src/ng12/retrieval/v1"
    for name in GENERATED:
        fresh = (tmp_path / "ng12/retrieval/v1" / name).read_text(encoding="utf-8")
        assert fresh == (committed / name).read_text(encoding="utf-8"), (
            f"{name} is out of date with proto/: run `make proto` and commit the result"
        )


def test_grpcio_tools_is_pinned_to_the_runtime_version() -> None:
    from importlib.metadata import version

    import grpc

    assert version("grpcio-tools") == grpc.__version__
