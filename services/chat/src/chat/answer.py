"""Answer composition without an LLM: extractive answers quoted verbatim, and fixed replies.

An extractive answer has a one-line lead built from the recommendations' structure (which
were met for the patient described, age thresholds not met, the actions), then the selected
recommendations grouped by cancer site and action, each quoted verbatim with its tag
"[NG12 1.1.1, p.9]". Nothing else is stated. Every reply ends with the disclaimer.
"""

from __future__ import annotations

import re
from collections import OrderedDict

from chat.premise import ages_with
from chat.selection import Selection
from ng12_common.actions import ACTIONS
from ng12_common.citations import recommendation_citation
from ng12_common.criteria import AgeGte, AgeLt, TestByAge, band_for_age, iter_nodes
from ng12_common.models import Citation
from ng12_common.served_recommendations import ServedRecommendation, rec_sort_key

DISCLAIMER = "Guideline information to support clinical judgement; not a diagnosis or a referral decision."
NO_ANSWER = "I couldn't find support in NG12 for that, so I can't answer it from the guideline."
REPHRASE = (
    "Try rephrasing with the symptom, sign or finding and the patient's age (for example "
    '"unexplained haemoptysis, aged 45: when to refer?"), or name the cancer site.'
)
SCOPE = (
    "NG12 covers recognising symptoms and signs that could be cancer and when to refer or investigate "
    "in primary care (suspected cancer pathway referrals, urgent tests, safety netting). It does not "
    "cover treatment, drug doses, prognosis or other guidelines."
)
#: Short heading of each action in a list of recommendations (ng12_common.actions).
ACTION_LABELS = {a: e.label for a, e in ACTIONS.items()}


def with_disclaimer(text: str) -> str:
    return f"{text.rstrip()}\n\n{DISCLAIMER}"


def rec_tag(rec_id: str | None, page: int) -> str:
    return f"[NG12 {rec_id}, p.{page}]" if rec_id else f"[NG12 p.{page}]"


def cite_tag(citation: Citation) -> str:
    return rec_tag(citation.recommendation_id, citation.page)


def rec_citation(rec: ServedRecommendation, score: float | None = None) -> Citation:
    return recommendation_citation(rec, score)


_COMPARATOR_WORDS = {">": "more than", ">=": "at least", "<": "less than", "<=": "at most"}


def _sentences(text: str) -> list[str]:
    parts = re.split(r"(?<=[.:])\s+(?=[A-Z])|\n(?=- |[A-Z])", text)
    return [p.strip() for p in parts if p.strip()]


def age_thresholds(recs: list[ServedRecommendation], age: int | None = None) -> str | None:
    """The age criteria the recommendations' structured criteria contain, e.g. "aged 40 and over
    (1.1.1 and 1.1.2); aged under 50 (1.6.1)", and with an age, the band of an age-banded test
    threshold that covers it ("at age 45, PSA more than 2.5 micrograms/litre (1.6.3)"); None
    when they contain none."""
    found: OrderedDict[str, list[str]] = OrderedDict()
    for rec in recs:
        if rec.criteria is None:
            continue
        for node in iter_nodes(rec.criteria):
            if isinstance(node, AgeGte):
                words = f"aged {node.value} and over"
            elif isinstance(node, AgeLt):
                words = f"aged under {node.value}"
            elif isinstance(node, TestByAge) and age is not None:
                band = band_for_age(node, age)
                if band is None:
                    continue
                if band.judgement or band.comparator is None or band.value is None:
                    judgement = (band.judgement or "use clinical judgement").lower()
                    words = f"at age {age}, no {node.name.upper()} threshold ({judgement})"
                else:
                    limit = f"{_COMPARATOR_WORDS[band.comparator]} {band.value:g} {node.unit}"
                    words = f"at age {age}, {node.name.upper()} {limit}"
            else:
                continue
            ids = found.setdefault(words, [])
            if rec.id not in ids:
                ids.append(rec.id)
    if not found:
        return None
    return "; ".join(f"{words} ({_ids(sorted(ids, key=rec_sort_key))})" for words, ids in found.items())


def _symptom_paths(rec: ServedRecommendation, symptom: str) -> list[frozenset[tuple[str, str]]]:
    """The age bounds of each place the symptom is in the recommendation's criteria (a walk of a
    small tree: not cached)."""
    return ages_with(rec.criteria, {symptom}) if rec.criteria is not None else []


def symptom_ages(recs: list[ServedRecommendation], symptoms: list[str]) -> str | None:
    """For each symptom of the patient a presented recommendation names, the age it goes with
    there: "dysphagia has no age threshold (1.2.1 and 1.2.7)"; "rectal bleeding goes with aged 18 to
    49 (1.3.1) or aged 50 and over (1.3.1)". None when no presented recommendation names them."""
    parts: list[str] = []
    for symptom in symptoms:
        free: list[str] = []
        bound: OrderedDict[str, list[str]] = OrderedDict()
        for rec in recs:
            if rec.criteria is None:
                continue
            for path in _symptom_paths(rec, symptom):
                if not path:
                    free.append(rec.id)
                    continue
                over = max((int(v) for d, v in path if d == "over"), default=None)
                under = min((int(v) for d, v in path if d == "under"), default=None)
                if over is not None and under is not None:
                    words = f"aged {over} to {under - 1}"
                else:
                    words = f"aged {over} and over" if over is not None else f"aged under {under}"
                ids = bound.setdefault(words, [])
                if rec.id not in ids:
                    ids.append(rec.id)
        name = symptom.replace("_", " ")
        if free:
            parts.append(f"{name} has no age threshold ({_ids(list(dict.fromkeys(free)))})")
        if bound:
            parts.append(f"{name} goes with " + " or ".join(f"{w} ({_ids(ids)})" for w, ids in bound.items()))
    if not parts:
        return None
    text = "; ".join(parts)
    return f"In NG12, {text}."


def _lead(sel: Selection, age: int | None, about_age: bool = False, symptoms: list[str] | None = None) -> str:
    recs = [r for r, _ in sel.recs]
    lines: list[str] = []
    met = [r.id for r in recs if r.id in sel.met]
    if met:
        who = f"aged {age} " if age is not None else ""
        named = [f"{rid} ({sel.met_by[rid]})" if sel.met_by.get(rid) else rid for rid in met]
        lines.append(f"For the patient {who}you describe, the criteria of {_ids(named)} are met.")
    for miss in sel.near_misses[:2]:
        lines.append(
            f"At {miss.age} the patient does not meet {miss.rec.id}: "
            f"{'for these symptoms ' if miss.by_branch else ''}it applies only to people aged "
            f"{miss.threshold} and over."
        )
    thresholds = age_thresholds(recs, age) if about_age or age is not None else None
    shown = [*recs, *(m.rec for m in sel.near_misses)]
    by_symptom = symptom_ages(shown, symptoms or []) if about_age or age is not None else None
    if by_symptom:
        lines.append(by_symptom)
    if thresholds:
        lines.append(f"Age criteria in these recommendations: {thresholds}.")
    if not (met or sel.near_misses):
        by_action = OrderedDict[str, list[str]]()
        for r in recs:
            by_action.setdefault(ACTION_LABELS.get(r.action, r.action or "other advice"), []).append(r.id)
        summary = "; ".join(f"{action}: {_ids(ids)}" for action, ids in by_action.items())
        lines.append(f"NG12 recommendations on this ({summary}):")
    return " ".join(lines)


def _ids(ids: list[str]) -> str:
    return ids[0] if len(ids) == 1 else ", ".join(ids[:-1]) + f" and {ids[-1]}"


def extractive(
    sel: Selection,
    age: int | None,
    quote: str | None = None,
    about_age: bool = False,
    symptoms: list[str] | None = None,
) -> str:
    """The grouped, verbatim answer for the selected recommendations. A quote request gets the
    sentences that contain its words, or is told plainly that none of them does."""
    not_found = None
    if quote:
        words = [w for w in re.findall(r"\w+", quote.lower()) if len(w) > 2]
        found = [
            f'> "{s}" {rec_tag(r.id, r.page)}'
            for r, _ in sel.recs
            for s in _sentences(r.text)
            if words and all(w in s.lower() for w in words)
        ]
        if found:
            return with_disclaimer("\n".join([f"NG12's wording on {quote}:", *found]))
        if sel.recs:
            not_found = (
                f'None of these recommendations mentions "{quote}": NG12 does not say it here. '
                "They are quoted in full below."
            )
    groups: OrderedDict[tuple[str, str], list[ServedRecommendation]] = OrderedDict()
    for rec, _score in sel.recs:
        site = (rec.cancer_site or rec.section_title or "NG12").strip()
        groups.setdefault((site, ACTION_LABELS.get(rec.action, "other advice")), []).append(rec)
    body = [*([not_found, ""] if not_found else []), _lead(sel, age, about_age, symptoms or []), ""]
    for (site, action), recs in groups.items():
        body.append(f"{site[:1].upper()}{site[1:]} - {action}:")
        body.extend(f'> "{r.text.strip()}" {rec_tag(r.id, r.page)}' for r in recs)
        body.append("")
    if sel.near_misses:
        body.append("Not met for this patient (shown for comparison):")
        body.extend(f'> "{m.rec.text.strip()}" {rec_tag(m.rec.id, m.rec.page)}' for m in sel.near_misses[:2])
    return with_disclaimer("\n".join(body))


def passages(citations: list[Citation]) -> str:
    quotes = [f'> "{c.excerpt.strip()}" {cite_tag(c)}' for c in citations]
    return with_disclaimer("\n".join(["NG12 says:", *quotes]))


def qualify(body: str) -> str:
    lead = (
        "NG12 only partly supports an answer: the passages below are the closest matches, but they may "
        "not cover every part of your question. What is not quoted here is not supported by NG12.\n\n"
    )
    return lead + body


def not_said(nearest: list[Citation]) -> str:
    """NG12 does not say it directly: the nearest recommendations, quoted."""
    body = "\n".join(f'> "{c.excerpt.strip()}" {cite_tag(c)}' for c in nearest)
    return with_disclaimer(
        "NG12 does not say this directly. The nearest recommendations it has, which may not answer "
        f"your question:\n\n{body}"
    )


def refuse() -> str:
    return with_disclaimer(f"{NO_ANSWER}\n{REPHRASE}")


COVERS = (
    "NG12 covers recognising symptoms and signs that could be cancer and when to refer or investigate "
    "in primary care."
)
SCOPE_REASONS: dict[str, str] = {
    "task_request": (
        "I can't write, draft or fill in documents (letters, referral forms, fit notes, prescriptions)"
    ),
    "logistics": (
        "I don't have local service details (hospitals, contact details, waiting times or booking), "
        "and NG12 does not cover them"
    ),
    "treatment": "NG12 does not cover that: it does not cover treatment, drug doses, prognosis or survival",
    "other_guideline": (
        "NG12 does not cover that: I answer only from NICE NG12, not from screening programmes or "
        "other guidelines"
    ),
    "non_medical": "NG12 does not cover that: it is outside what this service answers",
}


def out_of_scope(
    other_guideline: bool = False, kind: str | None = None, nearest: list[Citation] | None = None
) -> str:
    """A refusal: why, in one sentence what NG12 does cover, and the nearest thing it does say."""
    if kind in SCOPE_REASONS:
        first = f"{SCOPE_REASONS[kind]}."
    elif other_guideline:
        first = "NG12 does not cover that: I can only answer from NICE NG12, not other guidelines."
    else:
        first = "NG12 does not cover that (it is outside what the guideline covers)."
    text = f"{first} {COVERS}" if kind in SCOPE_REASONS else f"{first} {SCOPE}"
    if nearest:
        quotes = "\n".join(f'> "{c.excerpt.strip()}" {cite_tag(c)}' for c in nearest)
        text += f"\n\nThe nearest thing NG12 does say:\n{quotes}"
    return with_disclaimer(text)


def declined(parts: list[tuple[str, str]]) -> str:
    """The lead of a mixed request's answer: each part declined by name."""
    lines = [
        f'I can\'t help with "{part}": {SCOPE_REASONS.get(kind, "NG12 does not cover it")}.'
        for part, kind in parts
    ]
    return " ".join(lines) + " On the rest of your question, from NG12:\n\n"


def definition(term: str, passage: Citation) -> str:
    quote = f'> "{passage.excerpt.strip()}" {cite_tag(passage)}'
    return f'NG12 defines "{term}" in its terms used in this guideline:\n{quote}'


def smalltalk() -> str:
    return with_disclaimer(
        "Hello. Ask me what NICE NG12 says about a symptom, sign or finding, or when to refer or investigate."
    )


def meta() -> str:
    return with_disclaimer(
        "I am the NG12 Assessor chat: I answer questions about NICE guideline NG12 (suspected cancer: "
        "recognition and referral) using only the guideline's text, with citations to the recommendation "
        f"and page. {SCOPE}"
    )


def emergency(self_harm: bool) -> str:
    text = (
        "If someone is in immediate danger or this is a medical emergency, call 999 or go to A&E now. "
        "For urgent advice that is not an emergency, call NHS 111."
    )
    if self_harm:
        text += (
            " If you are thinking about harming yourself, you can call Samaritans on 116 123 "
            "(free, 24 hours)."
        )
    return with_disclaimer(text + " This service only answers questions about the NG12 guideline.")


def injection() -> str:
    return with_disclaimer(
        "I can't change my instructions or state anything NG12 does not say. I answer only from the "
        "text of NICE NG12, quoted with citations. Ask about a symptom, finding or referral criterion."
    )


def false_premise(claimed: str, quotes: list[Citation], compared: str = "", defined: str = "") -> str:
    """A question resting on something NG12 does not say: say so, (the patient's results against
    NG12's real thresholds,) (NG12's definitions of the terms the claim is about,) then quote what
    it does say."""
    text = f"NG12 does not say {claimed}."
    if compared:
        text += f" {compared}"
    if defined:
        text += f"\n\n{defined}\n\n"
    if quotes:
        body = "\n".join(f'> "{c.excerpt.strip()}" {cite_tag(c)}' for c in quotes)
        text += f"{'' if defined else ' '}What NG12 does say:\n\n{body}"
    elif not defined:  # NG12's definition, quoted above, is what it does say
        text += " I found no recommendation that states it, so I can't point you to a section for it."
    return with_disclaimer(text)


#: NG12's defined term for each action's timeframe (its "Terms used in this guideline").
ACTION_TERMS = {a: e.term for a, e in ACTIONS.items() if e.term}
_GROUP_WORDS = {
    "children": "children",
    "children_and_young_people": "children and young people",
    "adults": "adults",
}


def age_group_name(age: int) -> str:
    """NG12's group for an age: children from birth to 15, young people 16 to 24."""
    return "a child" if age < 16 else "a young person" if age < 25 else "an adult"


def age_group_lead(age: int, recs: list[ServedRecommendation]) -> str | None:
    """ "A 17-year-old is a young person in NG12's terms; 1.12.1 and 1.12.3 apply to children." when
    the answer presents recommendations for NG12's age groups; None otherwise."""
    by_group: OrderedDict[str, list[str]] = OrderedDict()
    for rec in recs:
        group = rec.population.get("age_group")
        if group in _GROUP_WORDS:
            by_group.setdefault(group, []).append(rec.id)
    if not (set(by_group) & {"children", "children_and_young_people"}):
        return None
    applies = "; ".join(
        f"{_ids(ids)} {'applies' if len(ids) == 1 else 'apply'} to {_GROUP_WORDS[g]}"
        for g, ids in by_group.items()
    )
    return f"A {age}-year-old is {age_group_name(age)} in NG12's terms; {applies}."


def defined(passage: Citation) -> str:
    """A definition from NG12's "Terms used in this guideline", quoted: '"Young people" means:
    "Aged 16 to 24 years." [NG12 p.85]' (the passage is the term's heading, then its text)."""
    term, _, text = passage.excerpt.strip().partition("\n")
    if not text.strip():
        return f'> "{passage.excerpt.strip()}" {cite_tag(passage)}'
    return f'> "{term.strip()}" means: "{" ".join(text.split())}" {cite_tag(passage)}'


def context_lead(sentence: str | None, passages: list[Citation]) -> str:
    """A lead sentence and NG12's own words for it (definitions, notes), quoted with pages."""
    lines = [sentence] if sentence else []
    lines += [
        defined(c)
        if "terms used in this guideline" in c.section.lower()
        else f'> "{c.excerpt.strip()}" {cite_tag(c)}'
        for c in passages
    ]
    return "\n".join(lines) + "\n\n" if lines else ""
