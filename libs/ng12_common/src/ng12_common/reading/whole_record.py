"""Readings that need the whole record, not one clause: what one entry says about another's finding.

- **Post-menopausal bleeding in lay words.** Vaginal bleeding or spotting (a clause naming spotting,
  a period, the vagina or underwear) in a woman whose record states she is post-menopausal
  ("post-menopausal", "periods stopped at 51", "LMP 18 months ago") is post-menopausal bleeding (NHS
  A-Z Post-menopausal bleeding: any vaginal bleeding a year or more after the last period; NICE NG23
  Menopause: menopause is 12 months without a period). Periods that stopped less than 12 months ago,
  or for another reason (pregnancy, breastfeeding, hormonal contraception: NHS A-Z Stopped or missed
  periods), do not make it so. The status is never inferred from age alone: NG12 does not define it so.
- **A neurological deficit's course.** A central neurological deficit in a record whose other entries
  only say the complaint is getting worse ("steadily worse over 3/52", "worsening over weeks") is
  progressive (NG12 1.9.1: "progressive, sub-acute loss of central neurological function"); a deficit
  whose own entry says it recovered fully ("fully recovered") was transient (NICE CKS
  Stroke and TIA: a TIA's symptoms resolve completely), not a current or progressive loss.
- **7-point checklist features stated apart from the lesion.** In a record about one pigmented lesion,
  a clause that only states a feature of the weighted 7-point checklist ("variegated pigment",
  "surrounding erythema", "colours look patchy") describes that lesion (MacKie's checklist, NG12 1.7.1).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING

from ng12_common.lexicon_match import ConceptMatch, add_match, clause_cues, normalise_phrase
from ng12_common.reading.clauses import site_stems, stems, word_tokens

if TYPE_CHECKING:
    from ng12_common.reading.record import RecordReading

PMB = "post_menopausal_bleeding"
# The menopause stated as such: by definition 12 months or more after the last period (NICE NG23)
_MENOPAUSE_STATED = re.compile(
    r"\b(post ?menopausal|post the menopause|after (the )?menopause|menopause (at|aged|age)|menopausal since|"
    r"went through (the )?menopause|had (the|her|my) menopause)\b"
)
_NOT_MENOPAUSE = re.compile(
    r"\b(peri ?menopaus\w*|pre ?menopaus\w*|not (yet )?(post ?)?menopaus\w*|still has periods)\b"
)
# Periods that stopped, with how long ago or at what age: "LMP 18 months ago", "periods stopped 8
# years ago", "no periods for 2 years", "last proper period 15 months ago", "not had a period for 14
# months", "periods stopped at 51". Only 12 months or more without a
# period is the menopause (NICE NG23); a shorter gap is not.
_PERIODS_STOPPED = re.compile(
    r"\b(?:lmp|last (?:proper |real |normal |natural |true |actual )?(?:menstrual )?period|"
    r"periods? (?:have |has )?stopped|no periods?|"
    r"(?:not|hasn'?t|has not|haven'?t|have not) had an? periods?)\b"
    r"\D{0,20}?(?:(?P<n>\d+(?:\.\d+)?)\s*(?P<unit>months?|mths?|years?|yrs?|y)\b|\b(?:at|aged|age)\s*(?P<at>\d{2})\b)"
)
# No period for a reason other than the menopause: pregnancy, breastfeeding, or hormonal contraception
# (NHS A-Z Stopped or missed periods). Bleeding then is not post-menopausal bleeding.
_OTHER_AMENORRHOEA = re.compile(
    r"\b(pregnant|pregnancy|gestation|antenatal|postnatal|post ?partum|breastfeeding|breast feeding|"
    r"mirena|ius|coil|depo|injection|implant|nexplanon|pill|cocp|pop|contracepti\w*)\b"
)
_NOT_PREGNANT = re.compile(
    r"\b(not pregnant|pregnancy test negative|negative pregnancy test|hcg negative|bhcg negative|"
    r"upt negative|negative upt)\b"
)
# Vaginal bleeding named as such: a bleeding word alone ("bleeding again") does not say where from.
_VAGINAL_BLEED = re.compile(
    r"\b(spotting|spotted|spots of blood|period|periods|vaginal|vagina|pv|per vaginam|down below|pants|"
    r"knickers|underwear|sanitary|pad|pads)\b"
)
_BLEED_WORD = re.compile(r"\b(bleed\w*|bled|blood|spotting|spotted)\b")
# a named site other than the vagina: that site's bleeding, never post-menopausal bleeding
_OTHER_SITE = re.compile(
    r"\b(rectal|rectum|pr|back passage|bottom|anus|anal|stool|stools|poo|urine|wee|pee|urinary|nose|"
    r"nosebleed|"
    r"gums?|mouth|cough\w*|vomit\w*|sick|nipple|skin|mole|lesion|cut|wound|after sex|post ?coital|bruis\w*)\b"
)


def _stopped_a_year_ago(m: re.Match[str], age: int | None) -> bool:
    if m.group("at") is not None:  # "at 51": at least a year before the patient's age now
        return age is not None and age >= int(m.group("at")) + 1
    n, unit = float(m.group("n")), m.group("unit")
    return (n >= 12 and unit.startswith("m")) or (n >= 1 and not unit.startswith("m"))


def _post_menopausal(reading: RecordReading) -> bool:
    """The record states the menopause, or periods that stopped 12 months or more ago, and no other
    reason for having no periods."""
    if reading.facts.sex != "female":
        return False
    texts = [normalise_phrase(f.entry, keep_stop_words=True) for f in reading.findings]
    if any(_OTHER_AMENORRHOEA.search(_NOT_PREGNANT.sub(" ", t)) for t in texts):
        return False
    for text in texts:
        if _NOT_MENOPAUSE.search(text):
            continue
        if _MENOPAUSE_STATED.search(text):
            return True
        m = _PERIODS_STOPPED.search(text)
        if m is not None and _stopped_a_year_ago(m, reading.facts.age):
            return True
    return False


def post_menopausal_bleeding(
    reading: RecordReading, kinds: Mapping[str, str], labels: Mapping[str, str]
) -> None:
    """Unread or unsited bleeding clauses of a post-menopausal woman's symptoms or examination are
    post-menopausal bleeding."""
    if PMB not in kinds or PMB in reading.facts.symptoms or not _post_menopausal(reading):
        return
    taken = set()
    for i, f in enumerate(reading.findings):
        if f.field == "history" or f.status not in ("unread", "finding", "not_ng12"):
            continue
        if f.status == "finding" and f.concept != "bleeding":
            continue
        clause = normalise_phrase(f.clause, keep_stop_words=True)
        if f.status == "not_ng12" and not _BLEED_WORD.search(clause):
            continue  # "vaginal bleeding" is read as not NG12 in general; after the menopause it is PMB
        if not _VAGINAL_BLEED.search(clause) or _OTHER_SITE.search(clause) or _PERIODS_STOPPED.search(clause):
            continue
        match = ConceptMatch(concept=PMB, kind=kinds[PMB], matched_text=f.clause, tier="curated")
        if f.concept == "bleeding":
            reading.facts.symptoms.pop("bleeding", None)
            reading.facts.findings.discard("bleeding")
        add_match(reading.facts, match, f.entry)
        f.concept, f.label, f.tier, f.status = PMB, labels.get(PMB, PMB), "curated", "finding"
        f.evidence = "vaginal bleeding in a woman recorded as post-menopausal"
        taken.add(i)
    reading.pending = [p for p in reading.pending if p.index not in taken]


NEURO_NEW = "newly_abnormal_central_neurological_function"
_WORSENING = re.compile(
    r"\b(worse|worsening|getting worse|progressive|progressively|progressing|deteriorat\w*|"
    r"gradually increasing|steadily increasing)\b"
)
_RECOVERED = re.compile(
    r"\b(completely recovered|fully recovered|recovered fully|recovered completely|"
    r"fully resolved|resolved completely|completely resolved|resolved fully)\b"
)


def neurological_course(reading: RecordReading) -> None:
    """A deficit that recovered fully in its own entry is transient; one whose record says only that
    the complaint is worsening is progressive."""
    s = reading.facts.symptoms
    if NEURO_NEW not in s:
        return
    fact = s[NEURO_NEW]
    if fact.text is not None and _RECOVERED.search(normalise_phrase(fact.text, keep_stop_words=True)):
        del s[NEURO_NEW]
        reading.facts.findings.discard(NEURO_NEW)
        for f in reading.findings:
            if f.concept == NEURO_NEW and f.entry == fact.text and f.status == "finding":
                f.status = "resolved"
        reading.explanations.append(
            "A neurological deficit that recovered fully is read as a transient event, not a current or "
            f"progressive loss of function ('{fact.text}')."
        )
        return
    if "progressive" in fact.modifiers:
        return
    others = {c for c in s if c != NEURO_NEW}
    if others:  # the worsening might belong to another complaint
        return
    for f in reading.findings:
        own = f.field in ("symptoms", "history") and f.concept is None
        if own and f.status in ("context", "history_not_used"):
            if _WORSENING.search(normalise_phrase(f.clause, keep_stop_words=True)):
                fact.modifiers.add("progressive")
                reading.explanations.append(
                    f"'{f.clause}' is read as the course of the neurological deficit, the record's only "
                    "complaint: progressive."
                )
                return


LESION = "pigmented_skin_lesion"
SEVEN_POINT = frozenset(
    {"change_in_size", "irregular_shape", "irregular_colour", "inflammation", "oozing", "change_in_sensation"}
)
# the words that name a lesion's colour or pigment: describing words, not further findings
_LESION_WORDS = frozenset(
    stems(
        "pigment pigmented pigmentation colour colours color colors shade shades brown dark light black "
        "blue grey "
        "tan pink outline border edge edges margin lesion mole surrounding variegated patchy mottled".split()
    )
)


_NEGATING = re.compile(r"\b(no|not|nil|without|never|none|neither|nor)\b")


def lesion_features(reading: RecordReading) -> None:
    """7-point checklist features stated in clauses of their own describe the record's one lesion."""
    fact = reading.facts.symptoms.get(LESION)
    if fact is None:
        return
    described = set()
    for i, f in enumerate(reading.findings):
        if f.field not in ("symptoms", "exam_findings") or f.concept is not None:
            continue
        if f.status not in ("context", "unread"):
            continue
        mods = set(clause_cues(f.clause)[0]) & SEVEN_POINT
        if not mods or _NEGATING.search(f.clause.lower()):  # "no change in size" states no feature
            continue
        words = set(stems(word_tokens(f.clause)))
        if f.status == "unread" and words & (reading.clinical_words - site_stems() - _LESION_WORDS):
            continue  # another finding word: it stays unread
        fact.modifiers |= mods
        if f.status == "unread":
            f.status, f.evidence = "context", "a 7-point checklist feature of the pigmented lesion"
            described.add(i)
    reading.pending = [p for p in reading.pending if p.index not in described]
