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

from ng12_common.reading.clauses import stems, word_tokens
from ng12_common.reading.context import default_rules

if TYPE_CHECKING:
    from ng12_common.reading.record import RecordReading

_PERSISTS = re.compile(
    r"\b(persist\w*|recur\w*|still|ongoing|continu\w*|despite|"
    r"after (completing|finishing|treatment|antibiotics|"
    r"successful|the course)|not resolved|not settled|not improving|returned|came back|again|since treatment|"
    r"post treatment|after treatment|treated but|completed (a )?course|on and off|off and on|intermittent\w*|"
    r"since then|since finishing|since completing|since the antibiotics|more episodes|further episodes?|"
    r"another episode|another bout|further bouts?|"
    r"comes and goes|keeps coming back|non healing|not healing|unhealed|wont heal|won t heal|will not heal|"
    r"not healed|failed to heal)\b"
)
# A change in a lasting condition's usual symptoms (NICE CKS Lung cancer: a change in the cough of a
# person with COPD), and the phrases that say there is none.
_UNCHANGED = re.compile(
    r"\b(no change( in)?|not changed|unchanged|no new|no worse|not worse|no different|usual|stable)\b"
)
_CHANGED = re.compile(
    r"\b(worse|worsening|worsened|new|changed|change in|different|increasing|increased|more|"
    r"getting worse|deteriorat\w*)\b"
)
# Words that call an infection persistent or recurrent (NG12 1.10.1: "persistent or recurrent
# infection"), counted episodes included ("3rd chest infection"). One list for the explanation rules
# here and for the safety check of findings NG12 does not use (``reading.record``).
RECURRENT = re.compile(
    r"\b(recurrent|recurring|repeated|persistent|persisting|keeps? coming back|again|another|frequent|"
    r"several|multiple|\d+(st|nd|rd|th)|second|third)\b"
)


class Explanation(BaseModel):
    """One rule of explanations.yaml."""

    model_config = ConfigDict(extra="forbid")
    diagnosis: str
    terms: list[str]
    explains: list[str]
    reason: str
    acute_infection: str | None = None  # the lexicon concept of the infection itself
    review: list[str] = []  # findings whose explanation a clinician must confirm (needs_review)
    window_days: int | None = None  # an acute cause dated longer ago than this explains nothing now
    # a lasting condition whose symptoms persist by nature (COPD's cough): what unexplains them is a
    # change in them ("cough worse", "new cough"), not their persistence
    chronic: bool = False


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
    return " ".join(word_tokens(text))


#: Where a clause ends (ConText's scope): a comma, a semicolon, a dash, a contrast. Not "." (decimals,
#: "E. coli") nor ":" ("MSU: E. coli" is one statement).
_CLAUSE_END = re.compile(r"[,;]| - | -- |\bbut\b|\bhowever\b|\balthough\b")


def _infection_words(reading: RecordReading, entry: str, evidence: str) -> str:
    """The words of an entry that speak of its infection: the clause that names it and every clause
    that names no other finding.

    "Visible blood in her urine again, 3 weeks after finishing trimethoprim for a UTI": "again" is
    said of the blood, so this UTI is one acute infection, and so is the one in "wee went red again a
    week after finishing trimethoprim for a water infection" ("again" straight after another finding
    is that finding's); "4th urine infection since March ...;
    settles with antibiotics but keeps coming back" stays recurrent."""
    others = [
        _norm(f.evidence)
        for f in reading.findings
        if f.entry == entry and f.evidence and f.evidence != evidence and f.concept
    ]
    own = _norm(evidence)
    kept = []
    for segment in _CLAUSE_END.split(entry):
        words = _norm(segment)
        names_own = bool(own) and f" {own} " in f" {words} "
        if names_own or not any(o and f" {o} " in f" {words} " for o in others):
            for o in others:  # "wee went red again ... for a water infection": "again" is the red wee's
                if o:
                    words = re.sub(rf"\b({re.escape(o)}(?: \w+)?) (again|once more)\b", r"\1", words)
            kept.append(words)
    return " ".join(kept)


# A diagnosis that is only queried or to be excluded is not a diagnosis: "?UTI", "query
# pneumonia", "possible chest infection", "r/o fracture", "UTI vs pyelonephritis".
_UNCERTAIN_BEFORE = re.compile(
    r"\b(query|possible|possibly|suspected|suspect|suspicion of|differential|ddx|rule out|r o|"
    r"exclude|excluded|to exclude|vs|versus)\s+(\w+\s+){0,2}$"
)
_UNCERTAIN_RAW = re.compile(r"\?\s*$")
_UNITS_DAYS = {
    "d": 1,
    "day": 1,
    "days": 1,
    "w": 7,
    "wk": 7,
    "wks": 7,
    "week": 7,
    "weeks": 7,
    "m": 30,
    "mo": 30,
    "mth": 30,
    "mths": 30,
    "month": 30,
    "months": 30,
    "y": 365,
    "yr": 365,
    "yrs": 365,
    "year": 365,
    "years": 365,
}
_NUMBER_WORDS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "twelve": 12,
    "eighteen": 18,
}
_AGO = re.compile(
    r"\b(\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten|twelve|eighteen)\s*"
    r"(days?|d|wks?|weeks?|w|mths?|months?|mo|yrs?|years?|y)\s+ago\b"
)
_SLASH_AGO = re.compile(r"\b(\d+)\s*/\s*(7|52|12)\s+ago\b")
_LAST_YEAR = re.compile(r"\b(last year|years ago|as a child|in childhood|childhood)\b")


def days_ago(text: str) -> int | None:
    """How long ago the entry dates what it records ("3 days ago", "4/52 ago", "18 months ago",
    "last year"), in days; None when it gives no date."""
    low = text.lower()
    m = _SLASH_AGO.search(low)
    if m is not None:
        return int(m.group(1)) * {"7": 1, "52": 7, "12": 30}[m.group(2)]
    m = _AGO.search(low)
    if m is not None:
        n = int(m.group(1)) if m.group(1).isdigit() else _NUMBER_WORDS[m.group(1)]
        return n * _UNITS_DAYS[m.group(2)]
    if _LAST_YEAR.search(low):
        return 365
    return None


def diagnoses_in(texts: list[str]) -> list[tuple[Explanation, str]]:
    """The diagnoses the texts record for this patient (rule, the entry that says so): stated, not
    negated, not a relative's, not hypothetical, not only queried, and (for an acute cause with a
    window) not dated longer ago than the window."""
    rules = default_rules()
    found: list[tuple[Explanation, str]] = []
    for text in texts:
        # ConText scope is the clause: "petechiae above the nipple line; none on the trunk"
        clauses = [c for c in (_norm(part) for part in _CLAUSE_END.split(text)) if c]
        for rule, pattern in explanation_rules():
            if any(r is rule for r, _t in found):
                continue
            for clause, m in ((c, m) for c in clauses for m in pattern.finditer(c)):
                before, after = clause[: m.start()], clause[m.end() :]
                if rules.status(before, after) in ("negated", "family", "hypothetical"):
                    continue
                if _UNCERTAIN_BEFORE.search(before) or _queried(text, m.group(0)):
                    continue
                ago = days_ago(text)
                if rule.window_days is not None and ago is not None and ago > rule.window_days:
                    continue
                found.append((rule, text))
                break
    return found


def _queried(text: str, term: str) -> bool:
    """The raw entry puts a question mark before the diagnosis ("?UTI", "? chest infection") or
    straight after it ("COPD? never had spirometry")."""
    low = text.lower()
    first, last = term.split()[0], term.split()[-1]
    before = any(
        m.start() > 0 and bool(_UNCERTAIN_RAW.search(low[: m.start()]))
        for m in re.finditer(rf"\b{re.escape(first)}\b", low)
    )
    return before or bool(re.search(rf"\b{re.escape(last)}\s*\?", low))


_TSH_KEYS = frozenset({"tsh", "thyroid stimulating hormone", "serum tsh"})
_FT4_KEYS = frozenset({"ft4", "free t4", "t4", "free thyroxine", "serum ft4"})
_NUMBER = re.compile(r"(\d+(?:\.\d+)?)")


def _first_number(value: str) -> float | None:
    m = _NUMBER.search(value)
    return float(m.group(1)) if m else None


def thyroid_from_results(test_texts: list[str]) -> str | None:
    """A thyroid diagnosis the results themselves make (NICE CKS Hypothyroidism, Hyperthyroidism:
    TSH above the reference range with a free T4 below it is primary hypothyroidism; TSH suppressed
    with a free T4 above the range is hyperthyroidism). Adult reference ranges: TSH 0.4-4.5 mU/L,
    free T4 9-25 pmol/L (the widest common UK laboratory limits, so borderline results decide
    nothing). Returns a line naming the diagnosis, or None."""
    tsh = ft4 = None
    for text in test_texts:
        key, _, value = text.partition(":")
        k = " ".join(word_tokens(key))
        if k in _TSH_KEYS:
            tsh = _first_number(value)
        elif k in _FT4_KEYS:
            ft4 = _first_number(value)
    if tsh is None or ft4 is None:
        return None
    if tsh > 4.5 and ft4 < 9:
        return f"hypothyroidism read from the results (TSH {tsh:g} mU/L, free T4 {ft4:g} pmol/L)"
    if tsh < 0.1 and ft4 > 25:
        return f"hyperthyroidism read from the results (TSH {tsh:g} mU/L, free T4 {ft4:g} pmol/L)"
    return None


def apply_explanations(reading: RecordReading) -> list[str]:
    """Mark the findings explained by a recorded diagnosis (in place); the assumption lines."""
    facts = reading.facts
    entries = [f.entry for f in reading.findings if f.field in ("history", "symptoms", "exam_findings")]
    # test results record diagnoses too: a positive urine culture ("MSU: E. coli > 10^5")
    thyroid = thyroid_from_results(reading.test_texts)
    unique = list(dict.fromkeys([*entries, *reading.test_texts, *([thyroid] if thyroid else [])]))
    notes: list[str] = []
    for rule, source in diagnoses_in(unique):
        persists = bool(_PERSISTS.search(_norm(source)))
        if rule.acute_infection and rule.acute_infection in facts.symptoms:
            infection = facts.symptoms[rule.acute_infection]
            # every entry that names the infection: "3rd chest infection since November" makes it
            # recurrent even when another entry ("LRTI Nov, Jan and Feb") was read last
            said = " ".join(
                _infection_words(reading, f.entry, f.evidence)
                for f in reading.findings
                if f.concept == rule.acute_infection
            ) or _norm(infection.text or "")
            if RECURRENT.search(said) and "recurrent" not in infection.modifiers:
                infection.modifiers = {*infection.modifiers, "recurrent"}
            if not RECURRENT.search(said) and not ({"persistent", "recurrent"} & infection.modifiers):
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
            if rule.chronic:
                if _CHANGED.search(_UNCHANGED.sub(" ", own)):
                    notes.append(
                        f"{concept.replace('_', ' ')} is NOT taken as explained by {rule.diagnosis}: "
                        "the record says it has changed (new or worse)."
                    )
                    continue
            elif persists or _PERSISTS.search(own):
                if rule.acute_infection == "urinary_tract_infection" and concept == "haematuria":
                    # NG12 1.6.4/1.6.6: "visible haematuria that persists or recurs after
                    # successful treatment of urinary tract infection"
                    facts.history.add("uti_successfully_treated")
                    fact.modifiers = {*fact.modifiers, "persistent"}
                notes.append(
                    f"{concept.replace('_', ' ')} is NOT taken as explained by {rule.diagnosis}: "
                    "the record says it "
                    "persists or recurs after the cause was treated."
                )
                continue
            fact.modifiers = {*fact.modifiers, "explained"}
            explained.append(concept.replace("_", " "))
            if concept in rule.review:
                reading.explained_review.append(
                    f"{concept.replace('_', ' ')} taken as explained by {rule.diagnosis} ('{source}'): "
                    "confirm the diagnosis accounts for it; if it persists after treatment, NG12 applies"
                )
        if explained:
            notes.append(
                f"Taken as explained by {rule.diagnosis} ('{source}'): {', '.join(explained)}. {rule.reason} "
                "Recommendations that require these to be unexplained are not met; re-assess if they persist."
            )
    return notes


# Words that state a diagnosis rather than name a finding ("impression: X", "Dx X", "thinks it is X",
# "c/w X"): they are not findings of their own.
_NOT_STATED = re.compile(
    r"\b(query|possible|possibly|suspected|differential|ddx|vs|versus|rule out|exclude)\b"
)
_STATING_WORDS = frozenset(
    "gp impression imp diagnosis diagnosed dx working clinical clinically likely probable probably presumed "
    "thinks think thought c w consistent keeping disease syndrome "
    # how an examination records what it saw: "posterior midline anal fissure visible on inspection"
    "visible seen evident noted present confirmed clearly obvious typical classic inspection examination "
    "exam oe appearance appearances".split()
)


def stated_diagnosis(clause: str, finding_stems: frozenset[str]) -> str | None:
    """The diagnosis of explanations.yaml a clause states, when the rest of the clause names no NG12
    finding (``finding_stems``: stems of the lexicon's finding words, body sites excluded):
    "impression: Osgood-Schlatter disease", "Dx: oral trauma". Such a clause is history that feeds
    the explanations, not an unread finding; "white plaques c/w oral candida" (a finding word beside
    the diagnosis) is not taken."""
    text = _norm(clause)
    if _NOT_STATED.search(text):
        return None
    for rule, pattern in explanation_rules():
        m = pattern.search(text)
        if m is None:
            continue
        rest = [w for w in (text[: m.start()] + " " + text[m.end() :]).split() if w not in _STATING_WORDS]
        if set(stems(rest)) & finding_stems:
            return None
        return rule.diagnosis
    return None
