"""Mode-specific reranking: small additive boosts, each explained on the hit.

Assessment mode (a patient profile is given), per candidate's recommendation(s):
- age threshold met (+0.15): the patient's age satisfies an age bound of the recommendation
  (its population, or an age atom of its criteria); an unmet bound gets no boost;
- symptom overlap (+0.10): one of the patient's symptom phrases (or its lexicon wording)
  appears in the chunk;
- smoking (+0.10): the patient has ever smoked and the recommendation mentions smoking;
- sex match (+0.05) / clash (-0.30): the recommendation is for one sex only.
Chat mode, from the question's wording:
- urgency words (+0.05) present in both query and chunk ("urgent", "48 hours", ...);
- age mention (+0.05): the query mentions an age and the chunk states an age threshold;
- duration words (+0.05) present in both ("weeks", "persistent", ...);
- quote / exact wording requested (+0.10) on recommendation chunks (canonical text).
The weights are the reference design's starting points; docs/retrieval.md reports the tuning.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

AGE_MATCH = 0.15
SYMPTOM_OVERLAP = 0.10
SMOKING = 0.10
SEX_MATCH = 0.05
SEX_CLASH = -0.30
INTENT = 0.05
QUOTE = 0.10

_URGENCY = ("urgent", "immediate", "48 hours", "2 weeks", "very urgent", "suspected cancer pathway")
_DURATION = ("week", "month", "persistent", "recurrent", "duration", "12 months", "3 weeks", "6 weeks")
_AGE_Q = re.compile(
    r"\b(aged?|\d{1,3}[- ]?(?:year|yr)s?[- ]?old|under \d{1,3}|over \d{1,3}|\d{1,3} and over)\b"
)
_QUOTE_Q = re.compile(r"\b(quote|verbatim|exact (?:wording|words|text)|word for word)\b")


@dataclass(frozen=True)
class BoostSpec:
    name: str
    value: float
    reason: str


def _age_atoms(node: Any) -> Iterator[tuple[str, int]]:
    if isinstance(node, dict):
        if node.get("op") in ("age_gte", "age_lt") and isinstance(node.get("value"), int | float):
            yield node["op"], int(node["value"])
        for child in node.get("of", []) if isinstance(node.get("of"), list) else [node.get("of")]:
            yield from _age_atoms(child)


def _population(canonical: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], set[str]]:
    pops = [c.get("metadata", {}).get("population") or {} for c in canonical]
    sexes = {str(p.get("sex", "any")) for p in pops}
    return pops, sexes


def assessment_boosts(
    chunk_text: str, canonical: list[dict[str, Any]], patient: dict[str, Any], symptom_terms: list[str]
) -> list[BoostSpec]:
    out: list[BoostSpec] = []
    age = patient.get("age")
    pops, sexes = _population(canonical)
    if age is not None and canonical:
        bounds: list[tuple[str, int]] = []
        for pop, rec in zip(pops, canonical, strict=True):
            if pop.get("min_age") is not None:
                bounds.append(("age_gte", int(pop["min_age"])))
            if pop.get("max_age_exclusive") is not None:
                bounds.append(("age_lt", int(pop["max_age_exclusive"])))
            bounds.extend(_age_atoms(rec.get("metadata", {}).get("criteria")))
        met = [(op, n) for op, n in bounds if (age >= n if op == "age_gte" else age < n)]
        if met:
            op, n = met[0]
            word = "≥" if op == "age_gte" else "<"
            out.append(BoostSpec("age_match", AGE_MATCH, f"patient age {age} {word} {n}"))
    text = chunk_text.lower()
    hit = next((t for t in symptom_terms if t and t.lower() in text), None)
    if hit:
        out.append(BoostSpec("symptom_overlap", SYMPTOM_OVERLAP, f"mentions '{hit}'"))
    if patient.get("smoking") in ("ex", "current") and "smok" in text:
        out.append(BoostSpec("smoking", SMOKING, "patient has smoked; recommendation concerns smokers"))
    sex = patient.get("sex")
    specific = sexes - {"any", ""}
    if sex in ("male", "female") and specific and "any" not in sexes:
        if sex in specific:
            out.append(BoostSpec("sex_match", SEX_MATCH, f"recommendation is for {sex} patients"))
        else:
            out.append(
                BoostSpec("sex_clash", SEX_CLASH, f"recommendation is for {'/'.join(sorted(specific))} only")
            )
    return out


def chat_boosts(query: str, chunk_text: str, doc_type: str) -> list[BoostSpec]:
    q, text = query.lower(), chunk_text.lower()
    out: list[BoostSpec] = []
    urgency = next((w for w in _URGENCY if w in q and w in text), None)
    if urgency:
        out.append(BoostSpec("urgency", INTENT, f"both mention '{urgency}'"))
    if _AGE_Q.search(q) and re.search(r"\baged \d+|\bunder \d+|\d+ and over", text):
        out.append(BoostSpec("age_mention", INTENT, "question mentions age; passage states an age threshold"))
    duration = next((w for w in _DURATION if w in q and w in text), None)
    if duration:
        out.append(BoostSpec("duration", INTENT, f"both mention '{duration}'"))
    if _QUOTE_Q.search(q) and doc_type == "rule_search":
        out.append(
            BoostSpec("quote_request", QUOTE, "exact wording requested; canonical recommendation text")
        )
    return out
