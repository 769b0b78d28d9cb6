"""Explained versus unexplained: a diagnosis in the record that accounts for a finding.

NG12 defines unexplained as "not led to a diagnosis ... after initial assessment". The curated
rules (``data/explanations.yaml``: diagnosis, its words, the findings it accounts for, and why)
mark a finding ``explained`` when a diagnosis that accounts for it is recorded (history, symptoms
or exam findings), is this patient's (ConText: not negated, not a relative's, not hypothetical),
and the finding does not persist or recur after the cause was treated ("haematuria persists
after the UTI was treated" stays unexplained, as NG12 1.6.4 says).

One acute, treated infection is not "persistent or recurrent": the infection itself is read as
the diagnosis, not as a persistent symptom, unless the record calls it persistent or recurrent.

Every explanation applied is returned as an assumption line for the response.
"""

from __future__ import annotations

import re
from functools import lru_cache
from importlib import resources
from typing import TYPE_CHECKING

import yaml
from pydantic import BaseModel, ConfigDict

from ng12_common.reading.context import default_rules

if TYPE_CHECKING:
    from ng12_common.reading.record import RecordReading

_PERSISTS = re.compile(
    r"\b(persist\w*|recur\w*|still|ongoing|continu\w*|despite|"
    r"after (completing|finishing|treatment|antibiotics|"
    r"successful|the course)|not resolved|not settled|not improving|returned|came back|again|since treatment|"
    r"post treatment|after treatment|treated but|completed (a )?course|on and off|off and on|intermittent\w*|"
    r"comes and goes|keeps coming back)\b"
)
_RECURRENT = re.compile(
    r"\b(recurrent|recurring|repeated|repeat|persistent|frequent|several|multiple|\d+(st|nd|rd|th)|second|third|another)\b"
)


class Explanation(BaseModel):
    """One rule of explanations.yaml."""

    model_config = ConfigDict(extra="forbid")
    diagnosis: str
    terms: list[str]
    explains: list[str]
    reason: str
    acute_infection: str | None = None  # the lexicon concept of the infection itself


@lru_cache(maxsize=1)
def explanation_rules() -> tuple[tuple[Explanation, re.Pattern[str]], ...]:
    raw = resources.files("ng12_common.reading").joinpath("data", "explanations.yaml").read_text("utf-8")
    rules = [Explanation.model_validate(x) for x in yaml.safe_load(raw)]
    return tuple(
        (
            r,
            re.compile(
                r"\b("
                + "|".join(re.escape(_norm(t)) for t in sorted(r.terms, key=len, reverse=True))
                + r")\b"
            ),
        )
        for r in rules
    )


def _norm(text: str) -> str:
    return " ".join(re.findall(r"[a-z0-9]+", text.lower()))


def diagnoses_in(texts: list[str]) -> list[tuple[Explanation, str]]:
    """The diagnoses the texts record for this patient (rule, the entry that says so)."""
    rules = default_rules()
    found: list[tuple[Explanation, str]] = []
    for text in texts:
        norm = _norm(text)
        for rule, pattern in explanation_rules():
            m = pattern.search(norm)
            if m is None or any(r is rule for r, _t in found):
                continue
            if rules.status(norm[: m.start()], norm[m.end() :]) in ("negated", "family", "hypothetical"):
                continue
            found.append((rule, text))
    return found


def apply_explanations(reading: RecordReading) -> list[str]:
    """Mark the findings explained by a recorded diagnosis (in place); the assumption lines."""
    facts = reading.facts
    entries = [f.entry for f in reading.findings if f.field in ("history", "symptoms", "exam_findings")]
    unique = list(dict.fromkeys(entries))
    notes: list[str] = []
    for rule, source in diagnoses_in(unique):
        persists = bool(_PERSISTS.search(_norm(source)))
        if rule.acute_infection and rule.acute_infection in facts.symptoms:
            infection = facts.symptoms[rule.acute_infection]
            # every entry that names the infection: "3rd chest infection since November" makes it
            # recurrent even when another entry ("LRTI Nov, Jan and Feb") was read last
            said = " ".join(
                _norm(f.entry) for f in reading.findings if f.concept == rule.acute_infection
            ) or _norm(infection.text or "")
            if _RECURRENT.search(said) and "recurrent" not in infection.modifiers:
                infection.modifiers = {*infection.modifiers, "recurrent"}
            if not _RECURRENT.search(said) and not ({"persistent", "recurrent"} & infection.modifiers):
                del facts.symptoms[rule.acute_infection]
                notes.append(
                    f"'{source}' is read as one acute infection (the diagnosis), "
                    "not as a persistent or recurrent "
                    f"{rule.acute_infection.replace('_', ' ')}."
                )
        explained: list[str] = []
        for concept in rule.explains:
            fact = facts.symptoms.get(concept)
            if fact is None or "explained" in fact.modifiers:
                continue
            # every entry that names the finding: "lump still there after the antibiotics" says it
            # persists even when the examination entry was read last
            own = " ".join(
                dict.fromkeys(_norm(f.entry) for f in reading.findings if f.concept == concept and f.entry)
            ) or _norm(fact.text or "")
            if persists or _PERSISTS.search(own):
                notes.append(
                    f"{concept.replace('_', ' ')} is NOT taken as explained by {rule.diagnosis}: "
                    "the record says it "
                    "persists or recurs after the cause was treated."
                )
                continue
            fact.modifiers = {*fact.modifiers, "explained"}
            explained.append(concept.replace("_", " "))
        if explained:
            notes.append(
                f"Taken as explained by {rule.diagnosis} ('{source}'): {', '.join(explained)}. {rule.reason} "
                "Recommendations that require these to be unexplained are not met; re-assess if they persist."
            )
    return notes
