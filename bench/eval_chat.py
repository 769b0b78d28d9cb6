"""`make eval-dev` (chat part): score the chat service on ../shared/eval-dev/chat_dev.json.

Runs the REAL path: a real retrieval server (conftest.start_retrieval) with the real NG12 PDF
ingested through ingestion.pipeline.ingest_pdf, real Redis (TEST_REDIS_URL, default db 15) and
the chat app in-process (FastAPI TestClient). Pass --retrieval-addr to reuse a running server.

Metrics: citation recall of must_cite ids; fact recall of must_mention (matcher below);
refusal accuracy on refuse turns (grounding none/out_of_scope/contradicted, or an explicit "NG12
does not support/cover/say"); false refusals on answer turns; answers without citations; must_not_claim
violations.

Fact matcher (`mentions`): both texts are normalised (lower case, accents folded, quotes and
punctuation removed, hyphens to spaces, plural "s" stripped). A fact matches when its normalised
form is a substring of the answer, or when some window of the answer (2 x the fact's key words,
at least 12 words) contains at least 85% of the fact's key words (stop words removed) and every
number in the fact. A must_not_claim is violated when its normalised form appears in the answer
(claims are full sentences; the extractive answer only quotes NG12, so a paraphrased claim would
have to come from the lead sentence, which is reviewed by hand in the printed answers).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import unicodedata
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from tests.support import find_eval_dev  # noqa: E402

CASES = find_eval_dev("chat_dev.json")
STOP = set(
    "a an the of in on at to for and or with by is are be if as that this it its their they them "
    "do does not no any all who which what when from using use people person".split()
)
REFUSAL_WORDS = re.compile(r"ng12 does not (support|cover|say)|couldn't find support in ng12", re.I)
REFUSED = ("none", "out_of_scope", "contradicted")


def norm_words(text: str) -> list[str]:
    t = unicodedata.normalize("NFKD", text)
    t = "".join(ch for ch in t if not unicodedata.combining(ch)).lower()
    t = re.sub(r"[\u2018\u2019'`\"]", "", t)
    words = re.findall(r"[a-z0-9]+(?:\.[0-9]+)?", t.replace("-", " "))
    return [w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w for w in words]


def mentions(answer: str, fact: str) -> bool:
    a, f = norm_words(answer), norm_words(fact)
    if " " + " ".join(f) + " " in " " + " ".join(a) + " ":
        return True
    keys = [w for w in f if w not in STOP]
    if not keys:
        return False
    numbers = {w for w in keys if w[0].isdigit()}
    width = max(12, 2 * len(keys))
    need = 0.85 * len(set(keys))
    for start in range(0, max(1, len(a) - width + 1)):
        window = set(a[start : start + width])
        if numbers <= window and len(set(keys) & window) >= need:
            return True
    return False


def claims(answer: str, claim: str) -> bool:
    return " ".join(norm_words(claim)) in " ".join(norm_words(answer))


def score(cases: list[dict[str, Any]], post: Any) -> dict[str, Any]:
    cite_total = cite_hit = fact_total = fact_hit = 0
    refuse_total = refuse_ok = false_refusals = uncited = violations = 0
    failures: list[str] = []
    for case in cases:
        sid = f"eval-{case['id']}-{uuid.uuid4().hex[:8]}"
        for i, turn in enumerate(case["turns"]):
            body = post({"session_id": sid, "message": turn["user"]})
            answer, grounding = body["answer"], body["grounding"]
            ids = {c["recommendation_id"] for c in body["citations"]}
            tag = f"{case['id']}#{i + 1}"
            for rid in turn["must_cite"]:
                cite_total += 1
                cite_hit += rid in ids
                if rid not in ids:
                    failures.append(f"{tag} missing citation {rid}")
            for fact in turn["must_mention"]:
                fact_total += 1
                ok = mentions(answer, fact)
                fact_hit += ok
                if not ok:
                    failures.append(f"{tag} missing fact: {fact}")
            for claim in turn["must_not_claim"]:
                if claims(answer, claim):
                    violations += 1
                    failures.append(f"{tag} claims: {claim}")
            if turn["expect"] == "refuse":
                refuse_total += 1
                ok = grounding in REFUSED or bool(REFUSAL_WORDS.search(answer))
                refuse_ok += ok
                if not ok:
                    failures.append(f"{tag} not refused ({grounding})")
            else:
                if grounding in REFUSED:
                    false_refusals += 1
                    failures.append(f"{tag} falsely refused ({grounding})")
                if not body["citations"]:
                    uncited += 1
                    failures.append(f"{tag} answer without citations")
    return {
        "citation_recall": round(cite_hit / max(1, cite_total), 3),
        "fact_recall": round(fact_hit / max(1, fact_total), 3),
        "refusal_accuracy": round(refuse_ok / max(1, refuse_total), 3),
        "false_refusals": false_refusals,
        "answers_without_citations": uncited,
        "must_not_claim_violations": violations,
        "failures": failures,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--retrieval-addr", default="")
    parser.add_argument("--cases", default=str(CASES))
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    from fastapi.testclient import TestClient

    from chat.app import create_app
    from chat.settings import ChatSettings

    cases = json.loads(Path(args.cases).read_text(encoding="utf-8"))
    redis_url = os.environ.get("TEST_REDIS_URL", "redis://127.0.0.1:6379/15")
    proc = None
    with tempfile.TemporaryDirectory() as tmp:
        addr = args.retrieval_addr
        if not addr:
            from ingestion.pipeline import ingest_pdf
            from tests.support import find_pdf, start_retrieval

            proc, port, _m, _log = start_retrieval(Path(tmp))
            addr = f"127.0.0.1:{port}"
            ingest_pdf(find_pdf(), addr, kb_dir=Path(tmp) / "kb")
        try:
            settings = ChatSettings(
                redis_url=redis_url, retrieval_addr=addr, chat_key_prefix="eval:chat", environment="test"
            )
            with TestClient(create_app(settings)) as client:

                def post(payload: dict[str, Any]) -> Any:
                    reply = client.post("/chat", json=payload)
                    reply.raise_for_status()
                    return reply.json()

                result = score(cases, post)
        finally:
            if proc is not None:
                from tests.support import stop_process

                stop_process(proc)  # type: ignore[arg-type]
    failures = result.pop("failures")
    print(json.dumps(result, indent=2))
    for line in failures:
        print("  -", line)
    ok = (
        result["citation_recall"] >= 0.95
        and result["fact_recall"] >= 0.9
        and result["refusal_accuracy"] == 1.0
        and result["false_refusals"] == 0
        and result["answers_without_citations"] == 0
    )
    print("PASS" if ok else "BELOW TARGET")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
