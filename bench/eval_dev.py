"""`make eval-dev`: score the development cases (../shared/eval-dev) for assessment and chat."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPTS = ["eval_assessment.py", "eval_chat.py"]


def main() -> int:
    here = Path(__file__).resolve().parent
    status = 0
    for name in SCRIPTS:
        print(f"== {name}", flush=True)
        status |= subprocess.call([sys.executable, str(here / name)], cwd=here.parent)
    return status


if __name__ == "__main__":
    raise SystemExit(main())
