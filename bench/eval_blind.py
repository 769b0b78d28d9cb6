"""`make eval-blind` / `make eval-blind-dev`: the blind evaluation sets, through the gateway.

The sets in eval/blind/ were written from the NG12 PDF alone by helpers that never read this code,
and each gold answer was checked by a second helper (eval/blind/README.md). Each set has a
development part (may be read and tuned on) and a locked part (scored only with `make eval-blind`,
when the work is believed done; never read to tune).

The whole stack starts as real processes on free ports (the `make run` launcher); every case goes
through the public gateway API: assessment cases as POST /api/v1/assess (the patient record),
chat cases through bench/eval_blind_chat.run (POST /api/v1/chat, one session per case).

Assessment metrics: must-cite recall (each must_cite_any group is one item), must-not-cite
violations (matched or cited), top action in acceptable_top_actions, and the safety count:
records with an unread finding that got `no_criteria_met` (must be 0).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

REPO = Path(__file__).resolve().parents[1]
BLIND = REPO / "eval" / "blind"


def assessment_metrics(
    base_url: str, cases: list[dict[str, Any]], verbose: bool, headers: dict[str, str] | None = None
) -> dict[str, Any]:
    from assessment.dev_eval import case_record, score_case, summary

    scores = []
    unsafe: list[str] = []
    incomplete = 0
    with httpx.Client(base_url=base_url, timeout=30.0, headers=headers or {}) as client:
        for case in cases:
            reply = client.post("/api/v1/assess", json=case_record(case))
            if reply.status_code != 200:
                print(f"{case['patient_id']}: HTTP {reply.status_code} {reply.text[:300]}")
                raise SystemExit(1)
            body = reply.json()
            a = body["assessment"]
            s = score_case(case, body)
            scores.append(s)
            if not a["complete"]:
                incomplete += 1
                if a["top_action"] == "no_criteria_met":
                    unsafe.append(case["patient_id"])
            if verbose:
                matched = [m["recommendation_id"] for m in a["matched_recommendations"]]
                flag = "ok " if s.correct else "BAD"
                print(
                    f"{flag} {s.case_id:8} top={s.top_action:34} want={case['expected']['top_action']:34} "
                    f"matched={','.join(matched) or '-'}"
                    + (f" missing={s.missing}" if s.missing else "")
                    + (f" violations={s.violations}" if s.violations else "")
                    + (f" unread={a['unrecognised']}" if a["unrecognised"] else "")
                )
    result = summary(scores)
    result["incomplete_records"] = incomplete
    result["unread_but_no_criteria_met"] = unsafe
    return result


def _print_assessment(label: str, r: dict[str, Any]) -> None:
    print(
        f"[{label}] cases {r['cases']}, fully correct {r['fully_correct']}/{r['cases']}; "
        f"must-cite recall {r['must_cite_recall']:.3f} ({r['must_cite_items']} items); "
        f"must-not-cite violations {r['must_not_cite_violations']}; "
        f"top-action accuracy {r['top_action_accuracy']:.3f}; "
        f"incomplete {r['incomplete_records']}; "
        f"unread finding but no_criteria_met: {len(r['unread_but_no_criteria_met'])}",
        flush=True,
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--part",
        choices=["dev", "dev2", "dev3", "dev4", "dev5", "dev6", "dev7", "dev8", "locked", "locked2"],
        default="locked2",
        help="dev2-dev8: later development sets; locked2: the locked set in use (locked: retired)",
    )
    parser.add_argument("--only", choices=["assessment", "chat", "both"], default="both")
    parser.add_argument("--base-url", help="score a running gateway instead of starting the stack")
    parser.add_argument("-v", "--verbose", action="store_true", help="one line per case")
    args = parser.parse_args()
    sys.path.insert(0, str(REPO))
    sys.path.insert(0, str(REPO / "bench"))
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

    def run(base_url: str, headers: dict[str, str] | None) -> int:
        if args.only in ("assessment", "both"):
            assessment_path = BLIND / f"assessment_{args.part}.json"
            if not assessment_path.exists():
                print(f"[assessment] {assessment_path} is missing", flush=True)
                return 1
            cases = json.loads(assessment_path.read_text(encoding="utf-8"))
            _print_assessment(
                f"assessment {args.part}", assessment_metrics(base_url, cases, args.verbose, headers)
            )
        if args.only in ("chat", "both"):
            chat_path = BLIND / f"chat_{args.part}.json"
            try:
                import eval_blind_chat
            except ImportError:
                print("[chat] bench/eval_blind_chat.py is missing", flush=True)
                return 1
            result = eval_blind_chat.run(base_url, str(chat_path), headers=headers)
            if args.part.startswith("locked") and not args.verbose:
                # a locked set's failure lines quote its questions: count them, never show them
                result["failures"] = len(result.get("failures", []))
            print(f"[chat {args.part}] " + json.dumps(result, indent=None, default=str), flush=True)
        return 0

    if args.base_url:
        token = os.environ.get("NG12_TOKEN", "")
        return run(args.base_url, {"Authorization": f"Bearer {token}"} if token else None)
    import redis

    from tests.support import find_pdf, load_launcher, stack_config

    # EVAL_READY_SECONDS: how long to wait for the stack (a loaded machine needs more than 600 s)
    # EVAL_REDIS_DB: a database of its own, so two evaluations on one machine do not flush each other
    eval_db = os.environ.get("EVAL_REDIS_DB", "12")
    redis_url = re.sub(r"/\d+$", f"/{eval_db}", os.environ.get("TEST_REDIS_URL", "redis://127.0.0.1:6379/15"))
    redis.Redis.from_url(redis_url).flushdb()
    launcher = load_launcher()
    with tempfile.TemporaryDirectory(prefix="ng12-eval-blind-") as var_dir:
        cfg = stack_config(
            launcher,
            redis_url=redis_url,
            ng12_pdf=find_pdf(),
            var_dir=Path(var_dir),
            log_level="WARNING",
            extra_env={"gateway": {"RATE_LIMIT_USER": "100000/minute", "RATE_LIMIT_CHAT": "100000/minute"}},
        )
        stack = launcher.Stack(cfg)
        stack.start()
        try:
            started = time.perf_counter()
            stack.wait_ready(float(os.environ.get("EVAL_READY_SECONDS", "600")))
            print(f"stack ready in {time.perf_counter() - started:.1f} s", flush=True)
            return run(f"http://127.0.0.1:{cfg.gateway_port}", stack.auth_headers("clinician"))
        finally:
            stack.stop()


if __name__ == "__main__":
    raise SystemExit(main())
