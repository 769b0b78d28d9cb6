"""`make bench`: run every benchmark script in bench/ and print their numbers."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

BENCHES = ["bench_kb.py", "bench_search.py", "calibrate_tier3.py", "bench_assessment.py", "bench_chat.py"]


def main() -> int:
    here = Path(__file__).resolve().parent
    status = 0
    for name in BENCHES:
        print(f"== {name}", flush=True)
        status |= subprocess.call([sys.executable, str(here / name)], cwd=here.parent)
    return status


if __name__ == "__main__":
    raise SystemExit(main())
