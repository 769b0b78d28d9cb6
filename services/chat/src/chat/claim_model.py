"""A structured claim model: what a message claims NG12 says, as (subject, attribute, value, polarity).

`chat.premise` reads claims by their numbers and words (a threshold, an age, an interval, a route,
a test) and looks for those words in NG12's text. Some claims have none of NG12's words to look
for: they claim a *property* of a set of recommendations. This module reads those as one
structure and checks each attribute against the recommendations themselves:

- `sex`: the recommendations are for one sex only ("the breast recs are for women"); checked
  against each subject recommendation's population (NG12 says "people", or "women"/"men").
- `prerequisite`: a test must come before a referral ("I need a CA125 back before I can 2WW");
  a referral recommendation on the findings that does not name the test refers without it.
- `order`: one test before another ("CT first, MRI only if the CT is clear"); only a
  recommendation naming the second test with a condition on the first makes it ("If serum CA125
  is 35 IU/ml or greater, arrange an ultrasound scan").
- `group`: a cut-off or rule for a population group ("a lower PSA cut-off for Black men"); some
  recommendation on the test or topic must name the group.
- `timeframe`: how soon an outcome follows a route ("he'll have his diagnosis within 2 weeks");
  NG12's definition of the route decides ("diagnosis or ruling out of cancer within 28 days").
- `count`: one finding is enough ("any single symptom off the list is enough"); a
  recommendation stating "2 or more" is evaluated for the patient described with one finding.
- `age_scope`: all the recommendations on a topic have an age floor ("head and neck recs are all
  45+"); each subject recommendation's lowest age.
- `information`: something claimed to be left unsaid to the person ("best not to mention cancer");
  a recommendation that says to explain or discuss it contradicts it (1.14.3).
- `route`: a test NG12 gives the findings straight away ("straight to CT for weight loss"), or a
  route it does not give them ("he doesn't need a 2WW"); the criteria engine, for the patient
  described.

The subject is the cancer sites or section the claim names ("breast", "head and neck", "the
lung list": `subject_recs`), else the recommendations on the findings named, else those search
found. Polarity is False for a negated claim ("doesn't need a 2WW"). A claim NG12 does not make
is contradicted and answered with what NG12 does say (`chat.claim_check` holds each attribute to
what decides it).

Every pattern below is about how such claims are phrased (a restriction "are for women", a
prerequisite "before I can refer", an order "X first, then Y"), never a particular question.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from chat.premise import asserts_guideline, claimed_text
from ng12_common.served_recommendations import ServedRecommendation

Attribute = Literal[
    "sex", "prerequisite", "order", "group", "timeframe", "count", "age_scope", "route", "information"
]


@dataclass(frozen=True)
class StructuredClaim:
    attribute: Attribute
    text: str  # as the user wrote it
    value: str  # "female", "ca125", "mri", "black", "2 week", "1", "45", "suspected cancer pathway", "ct"
    subject: tuple[str, ...] = ()  # the cancer sites or sections the claim names ("breast")
    polarity: bool = True  # False: the claim denies it ("he doesn't need a 2WW")
    before: str = ""  # order: the test claimed first (value is the one claimed after it)
    event: str = ""  # timeframe: the outcome claimed ("diagnosis")


# --- the words claims are made of -------------------------------------------------------------------
#: Tests as a GP writes them (scans and measured tests) -> the key of `chat.premise.TESTS`.
_TEST_WORDS: dict[str, str] = {
    "ct": r"ct(?: scan| head| chest| abdo\w*)?|computed tomography",
    "mri": r"mri(?: scan| head| brain)?",
    "x-ray": r"(?:chest )?x-?ray|cxr",
    "ultrasound": r"ultrasound(?: scan)?|uss|us scan",
    "endoscopy": r"(?:upper gi )?endoscopy|ogd|gastroscopy",
    "colonoscopy": r"colonoscopy",
    "biopsy": r"biopsy",
    "ca125": r"ca[- ]?125",
    "psa": r"psa",
    "fit": r"q?fit(?: test)?|faecal immunochemical test",
    "full blood count": r"full blood count|fbc|bloods",
    "dermoscopy": r"dermoscopy",
    "free light chain": r"(?:serum )?free light[- ]chains?(?: test(?:ing)?| assay)?|sflc|flc",
    "bence-jones": r"(?:urine |urinary )?bence[- ]?jones(?: protein| test)?|bjp",
    "electrophoresis": r"(?:serum )?protein electrophoresis|spep",
}
_TEST = "|".join(f"(?:{p})" for p in _TEST_WORDS.values())
#: A referral, as a GP writes it.
_REFER = (
    r"2 ?ww|two[- ]week[- ]wait|suspected cancer pathway(?: referral)?|refer\w*|urgent referral|"
    r"send (?:her|him|them|the patient)|fast[- ]?track"
)
_SEX_WORD = r"women|woman|females?|ladies|men|males?"
_SITE_ALIASES = {
    "gynae": "gynaecological",
    "gyn": "gynaecological",
    "bowel": "colorectal",
    "lower gi": "lower gastrointestinal tract",
    "upper gi": "upper gastrointestinal tract",
    "urology": "urological",
    "h&n": "head and neck",
    "head & neck": "head and neck",
    "ent": "head and neck",
    "haem": "haematological",
    "haematology": "haematological",
    "skin": "skin",
    "chest": "lung",
    "cns": "brain",
    "paeds": "childhood",
}


def _key(word: str) -> str | None:
    w = word.lower().strip()
    return next((k for k, p in _TEST_WORDS.items() if re.fullmatch(p, w, re.IGNORECASE)), None)


def _sex(word: str) -> str:
    return "male" if re.fullmatch(r"men|man|males?", word, re.IGNORECASE) else "female"


# --- reading ------------------------------------------------------------------------------------------
#: A restriction to one sex: "the breast recs are (only) for women", "women-only", "men don't qualify".
_SEX_CLAIM = re.compile(
    r"\b(?:recs?|recommendations?|criteria|guidance|rules?|pathways?|referrals?|2ww|sections?|advice|ones)\b"
    rf"[^.?!]{{0,25}}?\b(?:are|is|'re|apply|applies)\s+(?:(?:only|just|all|solely)\s+)?(?:for|to|about)\s+"
    rf"(?:(?:only|just)\s+)?(?P<a>{_SEX_WORD})\b|"
    rf"\b(?P<b>{_SEX_WORD})[- ]only\b|"
    rf"\b(?:only|just|solely)\s+(?:for|applies to|apply to|covers?|about)\s+(?P<c>{_SEX_WORD})\b|"
    rf"\b(?P<d>{_SEX_WORD})\s+(?:don'?t|do not|can'?t|cannot|won'?t|wouldn'?t|aren'?t)\s+"
    r"(?:qualify|count|meet|get|be referred|apply|covered|included)\b|"
    rf"\b(?:doesn'?t|does not|don'?t|do not)\s+(?:apply|count)\s+(?:to|for)\s+(?P<e>{_SEX_WORD})\b|"
    rf"\b(?:a|the)\s+(?P<f>man|male)\b[^.?!]{{0,40}}\b(?:doesn'?t|does not|can'?t|cannot|won'?t)\s+"
    r"(?:qualify|count|meet)\b",
    re.IGNORECASE,
)
#: A test claimed to be needed before a referral: "I need a CA125 back before I can 2WW", "FIT must
#: be done before referral", "can't refer without a FIT", "only refer once the ultrasound is back".
_PREREQUISITE = re.compile(
    r"\b(?:need|needs|needed|have to|has to|had to|must|should|got to|gotta|requires?|required to|"
    r"supposed to)\s+(?:to\s+)?(?:get|have|do|send|check|arrange|organise|order|request|wait for|see)?\s*"
    rf"(?:an?\s+|the\s+|her\s+|his\s+|their\s+)?(?P<a>{_TEST})\b(?:\s+(?:test|result|level|scan|done|back|"
    r"first|checked|results|reported))*\s+(?:before|prior to|ahead of)\b"
    rf"[^.?!]{{0,40}}?\b(?:{_REFER})\b|"
    rf"\b(?P<b>{_TEST})\b(?:\s+(?:test|result|level|scan))?\s+"
    r"(?:must|has to|needs? to|should|have to|is to)\s+"
    r"be\s+(?:done|back|checked|available|performed|arranged|requested|normal|abnormal|raised)\s+"
    rf"(?:first\s+)?(?:before|prior to|ahead of)\b[^.?!]{{0,40}}?\b(?:{_REFER})\b|"
    rf"\b(?:can'?t|cannot|can not|shouldn'?t|should not|mustn'?t|unable to|not allowed to)\s+(?:{_REFER})\b"
    rf"[^.?!]{{0,30}}?\b(?:without|until|unless|before)\s+(?:an?\s+|the\s+|her\s+|his\s+)?(?:\w+\s+)??"
    rf"(?P<c>{_TEST})\b|"
    rf"\b(?:only|just)\s+(?:{_REFER})\b[^.?!]{{0,25}}?\b(?:after|once|when)\s+(?:an?\s+|the\s+|her\s+|his\s+)?"
    rf"(?P<d>{_TEST})\b|"
    rf"\b(?P<e>{_TEST})\b\s+(?:is|are)\s+(?:a\s+)?(?:pre-?requisite|prerequisite|required|mandatory|needed)\s+"
    rf"(?:for|before)\s+(?:an?\s+|the\s+)?(?:{_REFER})\b",
    re.IGNORECASE,
)
#: One test claimed before another: "CT first, then MRI", "X-ray before ultrasound", "MRI only if the
#: CT is clear", "start with a CT then MRI".
_ORDER = re.compile(
    rf"\b(?P<a>{_TEST})\b[^.?!]{{0,25}}?\b(?:first|initially|1st|first[- ]line)\b[^.?!]{{0,20}}?"
    rf"(?:\bthen\b|\band then\b|\bfollowed by\b|\bbefore\b|,|;|-)\s*(?:\w+\s+){{0,3}}?(?P<b>{_TEST})\b|"
    rf"\b(?P<a2>{_TEST})\b\s+(?:scan\s+|test\s+)?(?:before|prior to|ahead of|then)\s+"
    r"(?:an?\s+|the\s+|any\s+)?"
    rf"(?P<b2>{_TEST})\b|"
    rf"\b(?P<b3>{_TEST})\b[^.?!]{{0,20}}?\b(?:only|just)\s+(?:if|when|after|once)\s+(?:the\s+|an?\s+)?"
    rf"(?P<a3>{_TEST})\b|"
    rf"\bstart (?:with|by doing) (?:an?\s+|the\s+)?(?P<a4>{_TEST})\b[^.?!]{{0,30}}?\bthen\s+"
    r"(?:an?\s+|the\s+)?"
    rf"(?P<b4>{_TEST})\b|"
    # "you only do serum free light chains if BJP isn't available"
    rf"\b(?:only|just)\s+(?:do|use|order|request|send|offer|arrange|check)\s+(?:an?\s+|the\s+)?(?P<b5>{_TEST})\b"
    rf"[^.?!]{{0,15}}?\b(?:if|when|after|once)\s+(?:the\s+|an?\s+)?(?P<a5>{_TEST})\b",
    re.IGNORECASE,
)
#: Population groups NG12 might be claimed to treat apart (ethnic groups, conditions, smokers).
_GROUP = (
    r"black|african[- ]caribbean|afro[- ]caribbean|african|caribbean|south asian|asian|chinese|white|"
    r"caucasian|hispanic|ethnic minorit(?:y|ies)|bame|jewish|ashkenazi|diabetics?|pregnant women|"
    r"smokers|non-smokers|obese (?:people|patients)|transgender (?:people|patients|women|men)"
)
_PEOPLE = r"(?:\s+(?:men|women|people|patients|pts|males|females))?"
_CUTOFF = r"cut[- ]?offs?|thresholds?|age (?:limit|threshold|cut-?off)s?|criteria|limits?|values?|ranges?"
#: A cut-off or rule claimed for a group: "a lower PSA cut-off for Black men", "for Black men the
#: threshold is lower", "an ethnicity-adjusted PSA".
_GROUP_CLAIM = re.compile(
    r"\b(?:lower|higher|different|separate|own|special|adjusted|reduced|specific|stricter|lower age)\s+"
    rf"(?:\w+\s+){{0,2}}?(?:{_CUTOFF})\s+(?:for|in)\s+(?:\w+\s+)??(?P<a>{_GROUP})\b{_PEOPLE}|"
    rf"\b(?:for|in)\s+(?P<b>{_GROUP})\b[^.?!]{{0,40}}?\b(?:{_CUTOFF})\b[^.?!]{{0,20}}?\b(?:is|are)\s+"
    r"(?:lower|higher|different|reduced)\b|"
    rf"\b(?P<c>{_GROUP})[- ](?:specific|adjusted)\b|\b(?P<d>ethnicity|race)[- ](?:adjusted|specific|based)\b|"
    # "gives smokers a lower age", "Black men have a different threshold"
    rf"\b(?P<e>{_GROUP})\b{_PEOPLE}[^.?!,]{{0,20}}?\b(?:lower|higher|different|separate|own|special|adjusted)\s+"
    rf"(?:\w+\s+){{0,2}}?(?:{_CUTOFF}|age)\b",
    re.IGNORECASE,
)
#: How soon an outcome follows: "he'll have his diagnosis within 2 weeks", "cancer ruled out in 14 days".
_EVENT = re.compile(
    r"\b(?P<event>diagnos(?:is|ed|e)|ruled out|rule (?:it )?out|confirmed or (?:excluded|ruled out))\b"
    r"[^.?!]{0,25}?\b(?:within|in|by|inside|after)\s+(?P<n>\d+|one|two|three|four|six|a)\s*"
    r"(?P<span>days?|weeks?|wks?|months?)\b|"
    r"\b(?:within|in|by|inside)\s+(?P<n2>\d+|one|two|three|four|six|a)\s*(?P<span2>days?|weeks?|wks?|months?)\b"
    r"[^.?!]{0,25}?\b(?P<event2>diagnos(?:is|ed|e)|ruled out)\b",
    re.IGNORECASE,
)
#: One finding claimed to be enough: "any single symptom is enough", "just one of them qualifies".
_SINGLE = re.compile(
    r"\b(?:any single|a single|any one|just one|only one|one|1|any)\s+(?:single\s+)?"
    r"(?:symptom|sign|finding|feature|thing|item|criterion|"
    r"of (?:them|these|those|the (?:symptoms|list|criteria)))"
    r"\b[^.?!]{0,40}?\b(?:is|are|'s|would be|will be|will do|should be)\s+"
    r"(?:enough|sufficient|adequate|fine)\b|"
    r"\b(?:only|just)\s+(?:need|needs|require|requires)\s+(?:one|1|a single)\s+(?:symptom|sign|finding|of)\b|"
    r"\b(?:one|1|a single)\s+(?:symptom|sign|finding)\s+(?:alone|on its own|by itself)\s+"
    r"(?:is enough|qualifies|counts|triggers|will do)\b",
    re.IGNORECASE,
)
#: An age floor claimed for all the recommendations on a topic: "head and neck recs are all 45+",
#: "all the recommendations are for 45 and over", "the lung criteria only apply from 40".
_AGE_SCOPE = re.compile(
    r"\b(?:recs?|recommendations?|criteria|pathways?|referrals?|rules?)\b[^.?!]{0,20}?\b(?:are|is|'re|were|was)\s+"
    r"(?:(?:all|only|just|always)\s+)(?:for\s+)?(?:people\s+|patients\s+)?(?:aged\s+|over\s+|above\s+)?"
    r"(?P<a>\d{2})\s*(?:\+|and over|or over|plus|and above|or older|s)?(?!\s*(?:mm|cm|kg|%|weeks?|days?))|"
    r"\ball (?:the |of the )?(?:[\w&]+\s+){0,3}?(?:recs?|recommendations?|criteria)\s+"
    r"(?:(?:are|were)\s+)?(?:for\s+)?"
    r"(?:people\s+)?(?:aged\s+|over\s+)?(?P<b>\d{2})\s*(?:\+|and over|or over|plus|and above|or older)|"
    r"\b(?:recs?|recommendations?|criteria)\b[^.?!]{0,20}?\b(?:only|all)\s+(?:apply|applies|start|kick in)\s+"
    r"(?:to|from|at)\s+(?:people\s+)?(?:aged\s+|over\s+)?(?P<c>\d{2})\b",
    re.IGNORECASE,
)
#: A test claimed as what NG12 does straight away for the findings: "straight to CT for weight loss".
_DIRECT_TEST = re.compile(
    rf"\b(?:straight|directly|direct|go straight|first[- ]line|just)\s+(?:to\s+|for\s+)?(?:an?\s+|the\s+)?"
    rf"(?P<a>{_TEST})\b",
    re.IGNORECASE,
)
#: A route denied for the patient: "he doesn't need a 2WW", "no need to 2WW her", "not a 2WW".
_NO_ROUTE = re.compile(
    r"\b(?:doesn'?t|does not|don'?t|do not|won'?t|wouldn'?t|shouldn'?t|needn'?t|isn'?t|is not|not)\s+"
    r"(?:need|needs|require|requires|warrant|warrants|qualify for|justify|merit)\s+(?:an?\s+|the\s+)?"
    r"(?:urgent\s+)?(?P<a>2 ?ww|two[- ]week[- ]wait|suspected cancer pathway(?: referral)?)\b|"
    r"\bno need (?:to|for)\s+(?:an?\s+|the\s+)?(?P<b>2 ?ww|two[- ]week[- ]wait|suspected cancer pathway)\b|"
    r"\b(?:not|isn'?t|is not)\s+(?:an?\s+)?(?P<c>2 ?ww|suspected cancer pathway)\s+"
    r"(?:case|candidate|referral|job)\b",
    re.IGNORECASE,
)
#: What to tell the person claimed to be left unsaid: "best not to mention cancer", "don't tell them
#: it's a cancer referral", "avoid the word cancer".
_WITHHELD = re.compile(
    r"\b(?:(?:best|better|advisable|wiser|kinder)\s+)?"
    r"(?:not\s+to|don'?t|do not|shouldn'?t|should not|never|no need to|avoid(?:ing)?)\s+(?:ever\s+)?"
    r"(?:mention(?:ing)?|say(?:ing)?|tell(?:ing)?(?:\s+(?:them|her|him|the patient|patients|people))?|"
    r"us(?:e|ing)|bring(?:ing)? up|rais(?:e|ing)|talk(?:ing)? about|discuss(?:ing)?)\s+"
    r"(?:(?:it'?s|that it'?s|about|the word|that)\s+)?(?:an?\s+|the\s+)?(?P<what>cancer)\b",
    re.IGNORECASE,
)
_SMOKER = re.compile(
    r"\b(?P<never>never smoked|non-?smoker|nonsmoker|doesn'?t smoke|does not smoke|never a smoker)\b|"
    r"\b(?P<ex>ex-?smoker|former smoker|quit smoking|stopped smoking|used to smoke)\b|"
    r"\b(?P<current>smoker|smokes|smoking)\b",
    re.IGNORECASE,
)


def smoking(message: str) -> str | None:
    """The patient's smoking status the message gives ("never smoked": never; the last one said,
    as a correction comes after what it corrects)."""
    found = list(_SMOKER.finditer(message))
    if not found:
        return None
    m = found[-1]
    return "never" if m.group("never") else "ex" if m.group("ex") else "current"


def _subject(text: str, sites: Iterable[str]) -> tuple[str, ...]:
    """The cancer sites or sections a claim names ("breast recs", "head and neck recs", "the lung list")."""
    low = text.lower()
    found = [s for s in sites if re.search(rf"\b{re.escape(s)}\b", low)]
    found += [v for k, v in _SITE_ALIASES.items() if re.search(rf"(?<![\w&]){re.escape(k)}(?![\w&])", low)]
    return tuple(dict.fromkeys(found))


def site_words(recs: Iterable[ServedRecommendation]) -> set[str]:
    """NG12's sites and section names, as words a claim names them by ("breast", "head and neck")."""
    out: set[str] = set()
    for r in recs:
        if r.cancer_site and r.cancer_site != "non-site-specific":
            out.add(r.cancer_site.lower())
        title = re.sub(r"\s+cancers?$", "", r.section_title.lower()).strip()
        if title and title not in ("non-site-specific symptoms", "safety netting", "the diagnostic process"):
            out.add(title)
    return out


def read(message: str, sites: Iterable[str] = ()) -> list[StructuredClaim]:
    """The structured claims a message makes about NG12 (empty unless it asserts something as
    NG12's). An outcome's timeframe is read in the writer's conclusion too ("so he'll have his
    diagnosis within 2 weeks, right?" asks for it to be confirmed); the rest only in what is
    asserted (`chat.premise.claimed_text`)."""
    sites = tuple(sites)
    if not asserts_guideline(message):
        # a statement about "the recommendations" is about NG12's, asked as a question or not ("the
        # breast recommendations are only for women, so a man doesn't qualify?"); a question that
        # asks it ("are the breast recs only for women?") has no such statement
        stated = [c for c in _about_recommendations(message, sites) if _RECS_WORD.search(c.text)]
        # a test said to be needed before a referral states a rule ("she needs a CA125 before I
        # can 2WW her"), unless it is asked ("do I need a CA125 before ...?")
        stated = [c for c in stated if not _QUESTION_START.match(c.text)]
        return stated + _prerequisites(message, stated_only=True)
    text = claimed_text(message)
    out = _about_recommendations(text, sites)
    out += _prerequisites(text)
    for m in _ORDER.finditer(text):
        first = next((m.group(g) for g in ("a", "a2", "a3", "a4", "a5") if m.group(g)), "")
        then = next((m.group(g) for g in ("b", "b2", "b3", "b4", "b5") if m.group(g)), "")
        a, b = _key(first), _key(then)
        if a and b and a != b:
            out.append(StructuredClaim("order", m.group(0).strip(), b, before=a))
    for m in _GROUP_CLAIM.finditer(text):
        group = next(g for g in m.groups() if g).lower()
        out.append(StructuredClaim("group", m.group(0).strip(), group))
    for m in _EVENT.finditer(message):
        n = m.group("n") or m.group("n2")
        span = (m.group("span") or m.group("span2")).lower()
        number = {"one": "1", "two": "2", "three": "3", "four": "4", "six": "6", "a": "1"}.get(n.lower(), n)
        unit = {"wk": "week"}.get(span.rstrip("s"), span.rstrip("s"))
        if asserts_guideline(_sentence_of(message, m.start())):
            out.append(
                StructuredClaim("timeframe", m.group(0).strip(), f"{number} {unit}", event="diagnosis")
            )
    for m in _SINGLE.finditer(text):
        rest = text[m.end() : m.end() + 60]
        out.append(StructuredClaim("count", m.group(0).strip(), "1", _subject(f"{m.group(0)} {rest}", sites)))
    for m in _DIRECT_TEST.finditer(text):
        key = _key(m.group("a"))
        if key is not None:
            out.append(StructuredClaim("route", m.group(0).strip(), key))
    for m in _WITHHELD.finditer(text):
        out.append(
            StructuredClaim("information", m.group(0).strip(), m.group("what").lower(), polarity=False)
        )
    for m in _NO_ROUTE.finditer(text):
        out.append(StructuredClaim("route", m.group(0).strip(), "suspected cancer pathway", polarity=False))
    return out


#: A clause that asks: "- do I need a FIT first ...", "should we have a CA125 before ...".
_ASKED = re.compile(
    r"\b(?:do|does|did|should|must|would|will|can|could|have|has|is|are)\s+"
    r"(?:i|we|you|she|he|they|it|the patient|my patient|the pt|pt)\s+(?:still\s+|really\s+|always\s+)?$",
    re.IGNORECASE,
)
_RECS_WORD = re.compile(r"\b(?:recs?|recommendations?|criteria|guidance|pathways?)\b", re.IGNORECASE)
#: A sentence that asks rather than states: "are the breast recs only for women?".
_QUESTION_START = re.compile(
    r"(?:are|is|do|does|did|can|could|should|would|will|what|which|when|how|why)\b", re.I
)


def _about_recommendations(text: str, sites: tuple[str, ...]) -> list[StructuredClaim]:
    """Claims about NG12's recommendations as such: a sex or an age floor they are said to have
    ("the breast recs are for women", "head and neck recs are all 45+"), each with the sentence's
    start (to tell a statement from a question) and the sites it names."""
    out: list[StructuredClaim] = []
    for m in _SEX_CLAIM.finditer(text):
        word = next(g for g in m.groups() if g)
        restricted = _sex(word)
        if m.group("d") or m.group("e") or m.group("f"):  # "men don't qualify": for women only
            restricted = "female" if restricted == "male" else "male"
        out.append(_with_clause("sex", text, m, restricted, sites))
    for m in _AGE_SCOPE.finditer(text):
        age = next(g for g in m.groups() if g)
        if 16 <= int(age) <= 90:
            out.append(_with_clause("age_scope", text, m, age, sites))
    return out


def _prerequisites(text: str, stated_only: bool = False) -> list[StructuredClaim]:
    """Tests claimed to be needed before a referral (`stated_only`: not in a sentence that asks)."""
    out: list[StructuredClaim] = []
    for m in _PREREQUISITE.finditer(text):
        if stated_only and (
            _QUESTION_START.match(_sentence_of(text, m.start()).strip()) or _ASKED.search(text[: m.start()])
        ):
            continue
        key = _key(next(g for g in m.groups() if g))
        if key is not None:
            out.append(StructuredClaim("prerequisite", m.group(0).strip(), key))
    return out


def _with_clause(
    attribute: Attribute, text: str, m: re.Match[str], value: str, sites: tuple[str, ...]
) -> StructuredClaim:
    """The claim with the words of its clause before it that name what it is about ("NG12's breast
    recs are for women"), and the sites they name."""
    start = max(text.rfind(c, 0, m.start()) for c in ".?!;,") + 1
    clause = _REPORTED.sub("", text[start : m.end()].strip())
    return StructuredClaim(attribute, clause, value, _subject(_sentence_of(text, m.start()), sites))


#: The words that report a claim, left out of the claim as the answer names it ("I thought ...").
_REPORTED = re.compile(
    r"^(?:i thought|i believe|i was told|i read|i heard|apparently|surely|i understand)\s+(?:that\s+)?",
    re.IGNORECASE,
)


def _sentence_of(message: str, at: int) -> str:
    start = max(message.rfind(c, 0, at) for c in ".?!") + 1
    ends = [i for i in (message.find(c, at) for c in ".?!") if i >= 0]
    return message[start : (min(ends) + 1) if ends else len(message)]
