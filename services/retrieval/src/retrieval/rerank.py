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

What a boost needs to know about a chunk (lower-cased text, age bounds, sexes, the intent words
it contains) is computed once per index version (`ChunkFeatures`), and what it needs to know about
a query once per request (`QueryIntent`), so reranking a candidate is a few set lookups.
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
_AGE_T = re.compile(r"\baged \d+|\bunder \d+|\d+ and over")


@dataclass(frozen=True)
class BoostSpec:
    name: str
    value: float
    reason: str


@dataclass(frozen=True)
class ChunkFeatures:
    """What reranking needs to know about one chunk, computed when its index version loads."""

    text: str  # lower-cased
    age_bounds: tuple[tuple[str, int], ...]  # ("age_gte" | "age_lt", n) of its recommendation(s)
    has_canonical: bool
    sexes: frozenset[str]  # populations of its recommendation(s): "any", "male", "female"
    mentions_smoking: bool
    states_age_threshold: bool
    urgency: frozenset[str]
    duration: frozenset[str]
    is_recommendation: bool  # a rule_search chunk: canonical recommendation text


@dataclass(frozen=True)
class QueryIntent:
    """What chat-mode reranking needs to know about one (normalised) query."""

    urgency: tuple[str, ...]
    duration: tuple[str, ...]
    mentions_age: bool
    wants_quote: bool


def _age_atoms(node: Any) -> Iterator[tuple[str, int]]:
    if isinstance(node, dict):
        if node.get("op") in ("age_gte", "age_lt") and isinstance(node.get("value"), int | float):
            yield node["op"], int(node["value"])
        for child in node.get("of", []) if isinstance(node.get("of"), list) else [node.get("of")]:
            yield from _age_atoms(child)


def chunk_features(chunk_text: str, doc_type: str, canonical: list[dict[str, Any]]) -> ChunkFeatures:
    text = chunk_text.lower()
    pops = [c.get("metadata", {}).get("population") or {} for c in canonical]
    bounds: list[tuple[str, int]] = []
    for pop, rec in zip(pops, canonical, strict=True):
        if pop.get("min_age") is not None:
            bounds.append(("age_gte", int(pop["min_age"])))
        if pop.get("max_age_exclusive") is not None:
            bounds.append(("age_lt", int(pop["max_age_exclusive"])))
        bounds.extend(_age_atoms(rec.get("metadata", {}).get("criteria")))
    return ChunkFeatures(
        text=text,
        age_bounds=tuple(bounds),
        has_canonical=bool(canonical),
        sexes=frozenset(str(p.get("sex", "any")) for p in pops),
        mentions_smoking="smok" in text,
        states_age_threshold=_AGE_T.search(text) is not None,
        urgency=frozenset(w for w in _URGENCY if w in text),
        duration=frozenset(w for w in _DURATION if w in text),
        is_recommendation=doc_type == "rule_search",
    )


def query_intent(query: str) -> QueryIntent:
    q = query.lower()
    return QueryIntent(
        urgency=tuple(w for w in _URGENCY if w in q),
        duration=tuple(w for w in _DURATION if w in q),
        mentions_age=_AGE_Q.search(q) is not None,
        wants_quote=_QUOTE_Q.search(q) is not None,
    )


def assessment_boosts(
    chunk: ChunkFeatures, patient: dict[str, Any], symptom_terms: list[str]
) -> list[BoostSpec]:
    out: list[BoostSpec] = []
    age = patient.get("age")
    if age is not None and chunk.has_canonical:
        met = next(
            ((op, n) for op, n in chunk.age_bounds if (age >= n if op == "age_gte" else age < n)), None
        )
        if met:
            op, n = met
            word = "≥" if op == "age_gte" else "<"
            out.append(BoostSpec("age_match", AGE_MATCH, f"patient age {age} {word} {n}"))
    hit = next((t for t in symptom_terms if t and t.lower() in chunk.text), None)
    if hit:
        out.append(BoostSpec("symptom_overlap", SYMPTOM_OVERLAP, f"mentions '{hit}'"))
    if patient.get("smoking") in ("ex", "current") and chunk.mentions_smoking:
        out.append(BoostSpec("smoking", SMOKING, "patient has smoked; recommendation concerns smokers"))
    sex = patient.get("sex")
    specific = chunk.sexes - {"any", ""}
    if sex in ("male", "female") and specific and "any" not in chunk.sexes:
        if sex in specific:
            out.append(BoostSpec("sex_match", SEX_MATCH, f"recommendation is for {sex} patients"))
        else:
            out.append(
                BoostSpec("sex_clash", SEX_CLASH, f"recommendation is for {'/'.join(sorted(specific))} only")
            )
    return out


def chat_boosts(intent: QueryIntent, chunk: ChunkFeatures) -> list[BoostSpec]:
    out: list[BoostSpec] = []
    urgency = next((w for w in intent.urgency if w in chunk.urgency), None)
    if urgency:
        out.append(BoostSpec("urgency", INTENT, f"both mention '{urgency}'"))
    if intent.mentions_age and chunk.states_age_threshold:
        out.append(BoostSpec("age_mention", INTENT, "question mentions age; passage states an age threshold"))
    duration = next((w for w in intent.duration if w in chunk.duration), None)
    if duration:
        out.append(BoostSpec("duration", INTENT, f"both mention '{duration}'"))
    if intent.wants_quote and chunk.is_recommendation:
        out.append(
            BoostSpec("quote_request", QUOTE, "exact wording requested; canonical recommendation text")
        )
    return out
