"""Rules deriving action, strength, timeframe, population and cancer site from NG12 wording.

Everything is read from the recommendation's own text (and, for population, from the
scope statement of its subsection, e.g. "The recommendations for ovarian cancer apply to
women aged 18 and over").

The *directive* is the clause that says what to do: the text from the opening verb to the
end of its sentence. The opening verb is the first word of the recommendation, or the first
word after a leading condition ("If the ultrasound suggests ovarian cancer, make a
referral ..."), or, when the recommendation starts with a lead-in that ends in a colon
("For people with unexplained weight loss ...:"), the first bullet that starts with a
referral/investigation verb. Only directives classify; anything else ("Put in place local
arrangements ...", "Discuss with people ...") is action "other", strength "other".

Action rules, applied to the directive in order (first match wins):

1. "immediate"                                  -> immediate_referral (e.g. 1.10.2)
2. "very urgent ... referral"                   -> very_urgent_referral
3. "very urgent" (a test: FBC, X-ray, scan)      -> very_urgent_investigation
4. "urgent investigation"                        -> urgent_investigation (1.13.2-1.13.4:
   "urgent investigation or a suspected cancer pathway referral")
5. "suspected cancer pathway"                    -> suspected_cancer_pathway_referral
6. "urgent referral" (not a pathway referral)    -> other (1.8.3: referral to a dentist; the
   vocabulary has no plain urgent referral)
7. "urgent" (a test "to be done within 2 weeks") -> urgent_investigation
8. "non-urgent referral" / "routine referral"     -> non_urgent_referral
9. "non-urgent", "direct access", or arranging a scan/X-ray/endoscopy without a timeframe
                                                 -> non_urgent_investigation
10. a test done in primary care (FIT, CA125, PSA, blood tests, "tests in primary care")
                                                 -> primary_care_test
11. otherwise                                    -> other

Timeframe: the explicit "within 48 hours" / "within 2 weeks" / "immediate" in the
directive; otherwise the definition of the action's urgency word in the guideline's terms
(urgent = within 2 weeks, very urgent = within 48 hours); a suspected cancer pathway
referral states no referral timeframe ("none").

Overrides: `OVERRIDES` is empty - every NG12 recommendation is classified by the rules
above. Add an entry only where the wording is genuinely ambiguous, with the reason.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ingestion.kb.text import strip_bullets
from ng12_common.knowledge import Population

#: Manual corrections: rec id -> (field, value, reason). Intentionally empty; see docstring.
OVERRIDES: dict[str, tuple[str, str, str]] = {}

_DIRECTIVE_VERBS = (
    "only consider",
    "make a referral",
    "refer",
    "offer",
    "consider",
    "arrange",
    "carry out",
    "measure",
)
_STRENGTH_OF_VERB = {
    "only consider": "consider",
    "make a referral": "refer",
    "refer": "refer",
    "offer": "offer",
    "consider": "consider",
}
_VERB_RE = re.compile(r"^(" + "|".join(re.escape(v) for v in _DIRECTIVE_VERBS) + r")\b", re.IGNORECASE)
_IMAGING = re.compile(r"\b(ultrasound|x-ray|endoscopy|ct scan|mri|scan)\b")
_PRIMARY_CARE_TEST = re.compile(
    r"(tests? in primary care|faecal immunochemical|\bfit\b|\bca125\b|\bpsa\b|prostate-specific antigen|"
    r"blood tests?|full blood count|appropriate tests)"
)
_URGENT = re.compile(r"(?<![-\w])urgent\b")  # "urgent" but not "non-urgent"
_AGE_MIN = re.compile(r"\b(?:aged\s+)?(\d{1,3})\s+(?:and|or)\s+over\b")
_AGE_UNDER = re.compile(r"\baged\s+under\s+(\d{1,3})\b|\bunder\s+(\d{1,3})\b")
_SCOPE = re.compile(
    r"apply to (women|men|people|adults|children)(?: aged (\d{1,3}) and over)?", re.IGNORECASE
)


@dataclass(frozen=True, slots=True)
class AgeGroups:
    """Age bounds of the guideline's age-group terms (from "Terms used in this guideline")."""

    children: tuple[int | None, int | None] = (None, None)  # (min_age, max_age_exclusive)
    young_people: tuple[int | None, int | None] = (None, None)
    children_and_young_people: tuple[int | None, int | None] = (None, None)


@dataclass(frozen=True, slots=True)
class Classification:
    action: str
    strength: str
    timeframe: str
    population: Population
    directive: str


def _sentence_end(text: str, start: int) -> int:
    """End of the sentence starting at `start` (a full stop outside brackets), or len(text)."""
    depth = 0
    for i in range(start, len(text)):
        ch = text[i]
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth = max(0, depth - 1)
        elif ch == "." and depth == 0 and (i + 1 == len(text) or text[i + 1].isspace()):
            return i + 1
    return len(text)


def find_directive(text: str) -> tuple[str, int, int] | None:
    """(opening verb, start, end) of the directive clause in `text`, or None if there is none."""
    body = text
    lead_in = body.find(":") if re.match(r"^(For|In)\b", body) else -1
    if lead_in > 0:
        # "For people with ...:" - the directives are the bullets; prefer one with a strength verb.
        starts = [lead_in + m.end() for m in re.finditer(r"(?m)^\s*- ", body[lead_in:])]
    else:
        lead = re.match(r"^(If|When|Once)\b[^,]*,\s*", body)
        starts = [lead.end() if lead else 0]
    found: list[tuple[str, int, int]] = []
    for start in starts:
        match = _VERB_RE.match(body[start:])
        if match:
            found.append((match.group(1).lower(), start, _sentence_end(body, start)))
    for verb, start, end in found:
        if verb in _STRENGTH_OF_VERB:
            return verb, start, end
    return found[0] if found else None


def classify_action(directive: str) -> str:
    d = re.sub(r"\s+", " ", directive)
    if "immediate" in d:
        return "immediate_referral"
    if re.search(r"very urgent[^.]*?referral", d):
        return "very_urgent_referral"
    if "very urgent" in d:
        return "very_urgent_investigation"
    if re.search(r"(?<![-\w])urgent investigation", d):
        return "urgent_investigation"
    if "suspected cancer pathway" in d:
        return "suspected_cancer_pathway_referral"
    if re.search(r"(?<![-\w])urgent referral", d):
        return "other"
    if _URGENT.search(d):
        return "urgent_investigation"
    if re.search(r"(non-urgent|routine) referral", d):
        return "non_urgent_referral"
    if "non-urgent" in d or "direct access" in d or (d.startswith("arrange") and _IMAGING.search(d)):
        return "non_urgent_investigation"
    if _PRIMARY_CARE_TEST.search(d) or d.startswith(("carry out", "measure")):
        return "primary_care_test"
    return "other"


def classify_timeframe(directive: str, action: str) -> str:
    d = re.sub(r"\s+", " ", directive)
    if action == "immediate_referral" or "immediate" in d:
        return "immediate"
    if "48 hours" in d:
        return "48 hours"
    if re.search(r"\b2 weeks\b", d):
        return "2 weeks"
    if action in ("very_urgent_referral", "very_urgent_investigation"):
        return "48 hours"  # "very urgent" = within 48 hours (terms)
    if action == "urgent_investigation":
        return "2 weeks"  # "urgent" = before 2 weeks (terms)
    return "none"


def _bound(values: list[int], pick_min: bool) -> int | None:
    if not values:
        return None
    return min(values) if pick_min else max(values)


def _ages(fragment: str) -> tuple[list[int], list[int]]:
    cleaned = re.sub(r"especially if aged \d+ (?:and|or) over", "", fragment)
    mins = [int(m.group(1)) for m in _AGE_MIN.finditer(cleaned)]
    unders = [int(m.group(1) or m.group(2)) for m in _AGE_UNDER.finditer(cleaned)]
    return mins, unders


def classify_population(text: str, scope_notes: list[str], groups: AgeGroups) -> Population:
    """Age bounds, sex and age group stated by the recommendation (and its subsection scope)."""
    low = text.lower()
    notes: list[str] = []
    # Age: the stem (before the first bullet) binds everyone; otherwise every top-level bullet
    # must state a bound for the recommendation as a whole to have one.
    parts = re.split(r"(?m)^- ", text)
    stem, bullets = parts[0], parts[1:]
    stem_min, stem_under = _ages(stem.lower())
    min_age = _bound(stem_min, pick_min=True)
    max_excl = _bound(stem_under, pick_min=False)
    if bullets and min_age is None and max_excl is None:
        per_bullet = [_ages(b.lower()) for b in bullets]
        if per_bullet and all(mins for mins, _ in per_bullet):
            min_age = min(min(mins) for mins, _ in per_bullet)
        elif any(mins for mins, _ in per_bullet):
            notes.append("age thresholds differ between the listed criteria")
        if per_bullet and all(unders for _, unders in per_bullet):
            max_excl = max(max(unders) for _, unders in per_bullet)
        elif any(unders for _, unders in per_bullet):
            notes.append("an upper age limit applies to some of the listed criteria")
    if "especially if aged" in low:
        match = re.search(r"especially if aged \d+ (?:and|or) over", low)
        notes.append(match.group(0) if match else "especially in older people")

    sex = "any"
    if re.search(r"\b(women|woman|her)\b", low):
        sex = "female"
    elif re.search(r"\bmen\b", low):
        sex = "male"

    age_group = "any"
    if re.search(r"children and young people|child or young person", low):
        age_group = "children_and_young_people"
        bounds = groups.children_and_young_people
    elif re.search(r"\bchild(ren)?\b", low):
        age_group = "children"
        bounds = groups.children
    elif re.search(r"\byoung people\b", low):
        age_group = "young_people"
        bounds = groups.young_people
    elif re.search(r"\badults\b", low):
        age_group = "adults"
        bounds = (None, None)
    else:
        bounds = (None, None)
    if bounds[0] is not None and min_age is None:
        min_age = bounds[0]
    if bounds[1] is not None and max_excl is None:
        max_excl = bounds[1]

    for note in scope_notes:
        match = _SCOPE.search(note)
        if not match:
            continue
        who, age = match.group(1).lower(), match.group(2)
        notes.append(match.group(0))
        if who == "women" and sex == "any":
            sex = "female"
        elif who == "men" and sex == "any":
            sex = "male"
        if age is not None and (min_age is None or min_age < int(age)):
            min_age = int(age)
    return Population(
        min_age=min_age,
        max_age_exclusive=max_excl,
        sex=sex,  # type: ignore[arg-type]
        age_group=age_group,  # type: ignore[arg-type]
        notes=notes,
    )


def classify(rec_id: str, text: str, scope_notes: list[str], groups: AgeGroups) -> Classification:
    """Action, strength, timeframe and population for one recommendation."""
    found = find_directive(text)
    if found is None:
        action, strength, timeframe, directive = "other", "other", "none", ""
        population_text = text
    else:
        verb, start, end = found
        directive = strip_bullets(text[start:end]).lower()
        strength = _STRENGTH_OF_VERB.get(verb, "other")
        action = classify_action(directive)
        timeframe = classify_timeframe(directive, action)
        # Who it applies to is stated up to the end of the directive; later sentences are
        # asides ("See NICE's guideline on irritable bowel syndrome in adults").
        population_text = text[:end]
    population = classify_population(population_text, scope_notes, groups)
    override = OVERRIDES.get(rec_id)
    if override is not None:
        field_name, value, _reason = override
        if field_name == "action":
            action = value
        elif field_name == "strength":
            strength = value
        elif field_name == "timeframe":
            timeframe = value
    return Classification(action, strength, timeframe, population, directive)


# --------------------------------------------------------------------------- cancer site

_SITE_ALIASES = {
    "malignant melanoma of the skin": "melanoma",
    "brain and central nervous system": "brain and CNS",
    "brain and central nervous system cancers": "brain and CNS",
}
_SITE_SUFFIXES = (" in children and young people", " in adults", " in children", " cancers", " cancer")


def cancer_site(section_title: str, subsection_title: str | None) -> str:
    """Lower-case site from the subsection heading (or the section when it names the site).

    "Lung cancer" -> "lung"; "Leukaemia in adults" -> "leukaemia"; "Non-Hodgkin's lymphoma"
    -> "non-Hodgkin's lymphoma" (eponyms keep their capital); section 1.9 "Brain and central
    nervous system cancers" with subsections "Adults"/"Children and young people" -> "brain
    and CNS"; sections about symptoms or process rather than a site -> "non-site-specific".
    """
    candidates = [subsection_title, section_title] if subsection_title else [section_title]
    for title in candidates:
        if not title:
            continue
        site = _site_from_title(title)
        if site:
            return site
    return "non-site-specific"


def _site_from_title(title: str) -> str | None:
    raw = title.strip()
    low = raw.lower()
    if low in ("adults", "children and young people", "children", "young people"):
        return None
    if re.search(r"\b(symptoms?|information|support|safety netting|diagnostic process)\b", low):
        return None
    if low in _SITE_ALIASES:
        return _SITE_ALIASES[low]
    for suffix in _SITE_SUFFIXES:
        if low.endswith(suffix):
            raw = raw[: -len(suffix)]
            low = raw.lower()
            break
    if low in _SITE_ALIASES:
        return _SITE_ALIASES[low]
    if low in ("childhood", "haematological", "gynaecological", "urological", "skin", "head and neck"):
        return None  # a group of sites: the subsection names the site
    if low.endswith("sarcomas"):
        return None
    first = raw.split(" ", 1)[0].split("-", 1)[0]
    if first.endswith(("'s", "'")):
        return raw  # eponym: "Hodgkin's lymphoma", "Wilms' tumour"
    return raw[:1].lower() + raw[1:]
