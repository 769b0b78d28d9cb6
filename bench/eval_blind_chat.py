"""Blind chat evaluation through the gateway: `run(base_url, cases_path) -> metrics`.

Each case is sent through `POST {base_url}/api/v1/chat`, one fresh session per case, its turns in
order. Cases have the format of ../shared/eval-dev/chat_dev.json, plus on refusal turns
`refuse_kind` (task_request, logistics, treatment, other_guideline, non_medical, false_premise)
and on mixed requests `also_decline` (the kind of the part to decline).

Metrics:
- refusals handled, per refuse_kind: a refuse turn gets grounding out_of_scope, none or
  contradicted and states none of its must_not_claim (never a confirmed false claim); a
  false_premise turn must also cite every must_cite id (the true recommendation);
- false refusal rate: answer turns (not mixed) answered with out_of_scope, none or contradicted;
- citation recall: must_cite ids cited, over answer turns and false-premise turns;
- fact recall: must_mention facts in the answer (the matcher of bench/eval_chat.py);
- answers without a citation: answer turns with no citation;
- mixed requests (also_decline): answered for the in-scope part (grounded, cites every must_cite
  id) AND the rest declined by name (a declining phrase and a word naming that kind of request);
- must_not_claim violations on every turn.

    .venv/bin/python bench/eval_blind_chat.py --base-url http://127.0.0.1:8000 \\
        --cases eval/blind/chat_dev.json

For quick iteration on chat alone, `--retrieval-addr HOST:PORT` runs the chat app in-process
(FastAPI TestClient, real Redis at TEST_REDIS_URL) against a running retrieval server with the
NG12 index, instead of the gateway; `-v` prints each answer turn's grounding and citations.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from eval_chat import claims, mentions

REFUSED = ("out_of_scope", "none", "contradicted")
DECLINES = re.compile(
    r"\b(can'?t|cannot|can not|unable to|don'?t have|do not have|does not cover|doesn'?t cover|not covered|"
    r"outside (what|the scope)|not able to)\b",
    re.IGNORECASE,
)
#: Words that name each kind of request being declined.
KIND_WORDS = {
    "task_request": r"write|draft|fill|letter|form|document|prescription|fit note|sick note|note",
    "logistics": r"local service|hospital|waiting|wait|phone|contact|booking|book|appointment|clinic",
    "treatment": r"treatment|dose|dosing|doses|drug|regimen|chemo|prognosis|survival|manage",
    "other_guideline": r"screening|programme|other guideline|guidelines|only from (nice )?ng12",
    "non_medical": r"outside|not medical|non-medical|only answer",
}

Post = Callable[[dict[str, Any]], dict[str, Any]]


def declined_by_name(answer: str, kind: str) -> bool:
    return bool(DECLINES.search(answer)) and bool(
        re.search(rf"\b({KIND_WORDS.get(kind, '.')})", answer, re.I)
    )


def score(cases: list[dict[str, Any]], post: Post, verbose: bool = False) -> dict[str, Any]:
    by_kind: dict[str, list[int]] = {}  # kind -> [handled, total]
    answer_turns = false_refusals = uncited = 0
    cite_total = cite_hit = fact_total = fact_hit = violations = 0
    mixed_total = mixed_ok = 0
    failures: list[str] = []
    for case in cases:
        sid = f"blind-{case['id']}-{uuid.uuid4().hex[:8]}"
        for i, turn in enumerate(case["turns"]):
            body = post({"session_id": sid, "message": turn["user"]})
            answer, grounding = str(body["answer"]), str(body["grounding"])
            cited = {c.get("recommendation_id") for c in body["citations"]}
            tag = f"{case['id']}#{i + 1}"
            if verbose:
                print(
                    f"== {tag} [{grounding}] cited={sorted(x for x in cited if x)} "
                    f"want={turn.get('must_cite', [])} {turn['expect']}: {turn['user']}\n"
                    f"query={body.get('query')} topic={body.get('topic')}\n{answer}\n",
                    flush=True,
                )
            kind = turn.get("refuse_kind")
            refuse = turn["expect"] == "refuse"
            claimed = [c for c in turn.get("must_not_claim", []) if claims(answer, c)]
            violations += len(claimed)
            failures += [f"{tag} claims: {c}" for c in claimed]
            for fact in turn.get("must_mention", []):
                fact_total += 1
                ok = mentions(answer, fact)
                fact_hit += ok
                if not ok:
                    failures.append(f"{tag} missing fact: {fact}")
            if not refuse or kind == "false_premise":
                for rid in turn.get("must_cite", []):
                    cite_total += 1
                    cite_hit += rid in cited
                    if rid not in cited:
                        failures.append(f"{tag} missing citation {rid}")
            if refuse:
                handled = grounding in REFUSED and not claimed
                if kind == "false_premise":
                    handled = handled and set(turn.get("must_cite", [])) <= cited
                counts = by_kind.setdefault(kind or "unspecified", [0, 0])
                counts[0] += handled
                counts[1] += 1
                if not handled:
                    failures.append(f"{tag} refusal not handled ({kind}, {grounding}): {turn['user']}")
                continue
            answer_turns += 1
            if not body["citations"]:
                uncited += 1
                failures.append(f"{tag} answer without a citation ({grounding}): {turn['user']}")
            if turn.get("also_decline"):
                mixed_total += 1
                answered = grounding in ("sufficient", "weak") and set(turn.get("must_cite", [])) <= cited
                ok = answered and declined_by_name(answer, str(turn["also_decline"]))
                mixed_ok += ok
                if not ok:
                    failures.append(
                        f"{tag} mixed request not answered and declined ({grounding}): {turn['user']}"
                    )
            elif grounding in REFUSED:
                false_refusals += 1
                failures.append(f"{tag} falsely refused ({grounding}): {turn['user']}")
    handled_total = sum(h for h, _ in by_kind.values())
    refuse_total = sum(n for _, n in by_kind.values())
    plain_answers = answer_turns - mixed_total
    return {
        "turns": answer_turns + refuse_total,
        "refusals_handled": round(handled_total / max(1, refuse_total), 3),
        "refusals_by_kind": {k: f"{h}/{n}" for k, (h, n) in sorted(by_kind.items())},
        "false_refusal_rate": round(false_refusals / max(1, plain_answers), 3),
        "false_refusals": false_refusals,
        "citation_recall": round(cite_hit / max(1, cite_total), 3),
        "fact_recall": round(fact_hit / max(1, fact_total), 3),
        "answers_without_citation": uncited,
        "mixed_requests": f"{mixed_ok}/{mixed_total}",
        "must_not_claim_violations": violations,
        "failures": failures,
    }


def run(
    base_url: str, cases_path: str, verbose: bool = False, headers: dict[str, str] | None = None
) -> dict[str, Any]:
    """Score the cases in `cases_path` through the gateway at `base_url` (signed in with `headers`).
    Each case's session name is mapped to a session the gateway creates for this user."""
    import httpx

    cases = json.loads(Path(cases_path).read_text(encoding="utf-8"))
    sessions: dict[str, str] = {}
    with httpx.Client(base_url=base_url.rstrip("/"), timeout=30.0, headers=headers or {}) as client:

        def post(payload: dict[str, Any]) -> dict[str, Any]:
            name = str(payload["session_id"])
            if name not in sessions:
                made = client.post("/api/v1/chat/sessions")
                made.raise_for_status()
                sessions[name] = made.json()["session_id"]
            reply = client.post("/api/v1/chat", json={**payload, "session_id": sessions[name]})
            reply.raise_for_status()
            result: dict[str, Any] = reply.json()
            return result

        return score(cases, post, verbose)


def run_in_process(retrieval_addr: str, cases_path: str, verbose: bool = False) -> dict[str, Any]:
    """Score the cases with the chat app in-process against a running retrieval server."""
    import os

    from fastapi.testclient import TestClient

    from chat.app import create_app
    from chat.settings import ChatSettings

    cases = json.loads(Path(cases_path).read_text(encoding="utf-8"))
    settings = ChatSettings(
        redis_url=os.environ.get("TEST_REDIS_URL", "redis://127.0.0.1:6379/15"),
        retrieval_addr=retrieval_addr,
        chat_key_prefix="eval:blindchat",
        environment="test",
    )
    with TestClient(create_app(settings)) as client:
        import time

        for _ in range(600):  # the scope classifier is fitted in the background at start-up
            if client.get("/readyz").status_code == 200:
                break
            time.sleep(0.5)

        def post(payload: dict[str, Any]) -> dict[str, Any]:
            reply = client.post("/chat", json=payload)
            reply.raise_for_status()
            result: dict[str, Any] = reply.json()
            return result

        return score(cases, post, verbose)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    target = parser.add_mutually_exclusive_group(required=True)
    target.add_argument("--base-url", help="the gateway, e.g. http://127.0.0.1:8000")
    target.add_argument("--retrieval-addr", help="chat in-process against this retrieval server")
    parser.add_argument("--cases", required=True, help="a JSON list of chat cases")
    parser.add_argument("-v", "--verbose", action="store_true", help="print every turn's answer")
    parser.add_argument("--token", default="", help="a bearer token (POST /api/v1/auth/token)")
    args = parser.parse_args()
    if args.base_url:
        headers = {"Authorization": f"Bearer {args.token}"} if args.token else None
        result = run(args.base_url, args.cases, args.verbose, headers)
    else:
        result = run_in_process(args.retrieval_addr, args.cases, args.verbose)
    failures = result.pop("failures")
    print(json.dumps(result, indent=2))
    for line in failures:
        print("  -", line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
