"""False premises: what a question claims NG12 says, checked against NG12's text; and injections.

A message makes claims about NG12 only when it asserts something as the guideline's ("NG12 says
...", "according to NICE ...", "is it true that ...", "which recommendation is that?", "the
threshold is ...", "I was told ..."). A question that asks ("When does NG12 recommend a CT for
...?") claims nothing. Within an assertion, `claims` extracts:
- thresholds: a named test with a number ("CA125 above 20", "PSA of 10", "platelets over 400");
- ages stated as a rule ("over 50", "under 40", "aged 30 and over");
- intervals and durations stated as a rule ("within 6 weeks", "for 3 weeks");
- urgency words NG12 uses for specific actions ("immediate", "same-day", "emergency");
- named tests ("a CT", "colonoscopy", "MRI").
A number that describes the patient ("a 65 year old", "aged 65", "lost 8 kg", "has had it for 3
weeks", "her CA125 is 48") is a fact about the patient, evaluated against the criteria, never a
claim about NG12.

`check` compares each claim with the text of the recommendations retrieved for the question
(and, for a threshold on a named test, every recommendation that names the test): a claim none
of them makes is contradicted. The answer then says "NG12 does not say ..." and quotes what NG12
does say (the recommendations naming the claim's test or site first), with citations.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Set
from dataclasses import dataclass
from typing import Literal

from chat.group_words import age_groups, group_mentions
from ng12_common.criteria import (
    AgeGte,
    AgeLt,
    AllOf,
    AnyOf,
    AtLeast,
    Criterion,
    Finding,
    Score,
    Symptom,
    TestByAge,
    iter_nodes,
)
from ng12_common.served_recommendations import ServedRecommendation

ClaimKind = Literal[
    "threshold",
    "age",
    "interval",
    "urgency",
    "test",
    "action",
    "measure",
    "population",
    "joint",
    "universal",
    "unnamed_test",
    "excludes",
    "waived",
    "count",
    "structured",  # a property of recommendations claimed (chat.claim_model)
]

# --- does the message assert something as NG12's? -------------------------------------------------
_ASSERTS = re.compile(
    r"\b(ng12|nice|the guidelines?|guidance|it)\s+"
    r"(?:(?:only|always|never|just|now|still|clearly|basically)\s+)?"
    r"(says?|said|states?|stated|recommends|recommended that|requires|mandates|advises|specifies|sets|lists|"
    r"puts|tells us|tells you to|wants|expects|insists|stipulates|demands|suggests that|calls for|allows|"
    r"permits|restricts|limits|refers(?! to)|reserves|only covers|gives(?: us| you| gps)?|lets us|uses|"
    r"applies|counts|defines|classe?s|classifies|regards|treats|needs|makes you|only lets)\b|"
    # a claim written as an equation or a label: "ng12 = refer if 55+", "NICE: CT for everyone"
    r"\b(ng12|nice)\s*(=|->|:)\s*\w|"
    # a tag question after the claim, wherever the message goes on: "..., correct? 52F, MSU clear"
    r"[,;\-\u2013]\s*(is that |am i |that'?s )?(right|correct|true|yes|yeah)\s*\?|"
    r"\b(is it true|isn'?t it true|isn'?t it|am i right|correct me|confirm( that)?|just (to )?check(ing)?|"
    r"i read|i heard|"
    r"i was told|i've been told|we were told|we were taught|i was taught|i learn[te]d|apparently|"
    r"is that (right|correct|true)|"
    r"(?:(?:my|our|a|the|one of (?:my|our|the))\s+)?(colleagues?|trainer|registrar|reg|partners?|consultant|"
    r"supervisor|tutor|mentor|senior|boss|practice nurse|nurse practitioner|nurse|anp|pharmacist|locum|"
    r"gp partner|trainee|f2|fy1|fy2|st\d|practice manager|manager|receptionist|radiologist|someone|somebody) "
    r"(said|says|reckons|thinks|told me|tells me|insists|claims|swears|mentioned|suggested|suggests|believes|"
    r"is adamant|was adamant|keeps saying))\b|"
    # a claim read or heard elsewhere, by the GP or the patient: "pt read online that ...", "heard that ..."
    r"\b(read|heard|saw|seen) (online |on the internet |on google |on a website |on a forum |somewhere |"
    r"in an article )?that\b|\bread online\b|"
    r"\bwhich (recommendation|rec|section|part|paragraph|bit)\b.{0,30}\b(that|this|it|says?)\b|"
    r"\bwhere does (ng12|nice|it|the guideline) say\b|"
    # not "MRI per NICE?", "... according to NICE NG12?"
    r"\b(according to|as per|per|under|in line with|following|given|since|as|because) "
    r"(ng12|nice|the guidelines?)(?:'s)?\b(?! (cover|define|mean))(?!\W*(?:ng12\W*)?$)(?!\s*(?:ng12\s*)?\?)|"
    r"\b(since|as|given that|because) (ng12|nice|the guidelines?|it) (says?|recommends|states|requires)\b|"
    r"\b(does(n'?t| not)|didn'?t|did not) (ng12|nice|the guideline) (say|recommend|state|require)\b|"
    r"\b(surely|i thought|i believe|i understand|my understanding is|i remember)\b|"
    # an assumption stated to be checked: "I'm assuming she doesn't meet ...", "I take it ..."
    r"\b(i'?m assuming|i am assuming|i assume|presumably|i take it|i gather|i suppose|i guess|i reckon)\b|"
    # more tag questions after a claim: "... though hasn't it?", "... - agree?"
    r"\b(hasn'?t|haven'?t|won'?t|wouldn'?t|shouldn'?t|didn'?t|wasn'?t|weren'?t|can'?t|couldn'?t|isn'?t|"
    r"doesn'?t|don'?t|aren'?t) (it|they|he|she|we|you|there|that)\s*\?|\b(do you )?agree\s*\?|"
    r"\b(ng12|nice)'?s? ([\w+-]+ ){0,2}(threshold|cut[- ]?off|age limit|rule|criterion|criteria|limit)\b|"
    r"\b(right|correct|yes|yeah|true|no)\s*\?\s*$|\b(isn'?t that|doesn'?t it|don'?t they|aren'?t they)\b|"
    r"\bthe (\w+ )?(threshold|cut[- ]?off|age limit)( for [\w\s-]{1,30})? (is|of)\b|"
    r"\bwhy does (ng12|nice|the guideline) (say|recommend|require)\b",
    re.IGNORECASE,
)
_INJECTION = re.compile(
    r"\b(ignore|disregard|forget|override) (all |any )?(your|the|previous|prior|above|earlier) "
    r"(instructions?|rules?|prompts?|guidelines?|context)\b|\b(system prompt|you are now|pretend (to be|you)|"
    r"act as|jailbreak|from now on (you|say))\b",
    re.I,
)

# --- what is claimed -------------------------------------------------------------------------------
#: Test names as a question writes them -> a pattern for the same test in NG12's text.
TESTS: dict[str, str] = {
    "ca125": r"ca ?125",
    "psa": r"\bpsa\b|prostate[- ]specific antigen",
    "fit": r"\bfit\b|faecal immunochemical",
    "platelets": r"platelet|thrombocytosis",
    "haemoglobin": r"haemoglobin|\bhb\b|anaemia",
    "calcium": r"calcium|hypercalcaemia",
    "ferritin": r"ferritin|iron[- ]deficiency",
    "ct": r"\bct\b|computed tomography",
    "mri": r"\bmri\b|magnetic resonance",
    "x-ray": r"x-?ray",
    "ultrasound": r"ultrasound",
    "endoscopy": r"endoscop",
    "colonoscopy": r"colonoscop",
    "biopsy": r"biops",
    "mammogram": r"mammogra",
    "dermoscopy": r"dermoscop",
    "full blood count": r"full blood count|\bfbc\b",
    "checklist score": r"7-point checklist|checklist",
}
_TEST_WORDS = {
    "ca125": r"ca[- ]?125",
    "psa": r"psa",
    "fit": r"fit(?: test)?|qfit|faecal immunochemical test",
    "platelets": r"platelets?(?: count)?|plt",
    "haemoglobin": r"ha?emoglobin|hb",
    "calcium": r"(?:serum |corrected )?calcium",
    "ferritin": r"ferritin",
    "checklist score": r"(?:7|seven)[- ]point checklist(?: score)?|checklist score",
}
_SCANS = {
    "ct": r"ct(?: scan)?|computed tomography",
    "mri": r"mri(?: scan)?",
    "x-ray": r"(?:chest )?x-?ray|cxr",
    "ultrasound": r"ultrasound(?: scan)?|uss",
    "endoscopy": r"(?:upper gi )?endoscopy|ogd|gastroscopy",
    "colonoscopy": r"colonoscopy",
    "biopsy": r"biopsy",
    "mammogram": r"mammogram|mammography",
    "dermoscopy": r"dermoscopy",
    "full blood count": r"full blood count|fbc",
}
_NUM = r"(?P<num>\d+(?:\.\d+)?)"
#: A copula between a test and its comparison ("platelets are over 600", "PSA is above 3", "FIT was
#: over 10"): read only before a comparison word (a past one is the patient's unless in a condition).
_COPULA = (
    r"(?:(?:is|are|be|being|was|were|gets?|goes)\s+(?=(?:above|over|greater|more|higher|exceeding|at least|"
    r"below|under|less|lower|>|<|≥|≤)))?"
)
_COMPARE = (
    rf"{_COPULA}(?:level |result |value |count |score |reading )?"
    r"(?:of|above|over|greater than|more than|higher than|"
    r"exceeding|>=?|≥|at least|below|under|less than|lower than|<=?|≤|at|is|=|is over|is above|is below)?\s*"
)
_THRESHOLD = re.compile(
    rf"\b(?P<test>{'|'.join(_TEST_WORDS.values())})\s*(?:[\w\s'-]{{0,30}}?\b(?:threshold|cut[- ]?off|limit)\b"
    rf"[\w\s'-]{{0,30}}?\s(?:is|of|=)\s+|"
    # what makes a result positive: "FIT only counts as positive above 20"
    r"(?:only\s+)?(?:counts?|is counted|is classed|classes|is read|reads) as "
    rf"(?:positive|abnormal|raised|high|significant)\s+)?{_COMPARE}{_NUM}\s*(?P<unit>iu/ml|u/ml|ng/ml|"
    r"micrograms?/l(?:itre)?|µg/l|ug/l|g/l|g/dl|mmol/l|x ?10\^?9/l|µg/g|ug/g|micrograms? per gram)?",
    re.IGNORECASE,
)
#: The patient's own result: "her CA125 is 48", "PSA came back 7", "a FIT of 15 last week".
_PATIENT_RESULT = re.compile(
    r"\b(his|her|their|the patient'?s|my patient'?s|pt'?s|patient has an?|came back|result(ed)? (was|is|of)|"
    r"was|were|measured|has a|had a)\b[^.?!]{0,25}$",
    re.IGNORECASE,
)
#: After a number, what makes it something other than an age (a size, a weight, a duration, a unit).
_NOT_AGE_AFTER = (
    r"(?!\s*(?:mm|cm|kg|%|years? old|y/?o|days?|weeks?|wks?|months?|mths?|hours?|hrs?|mg|iu|ng|"
    r"micrograms?|g/l|mmol|platelets?|x|points?|times|episodes?))"
)
_AGE_RULE = re.compile(
    r"\b(?:over|above|older than|under|below|younger than|aged)\s+(\d{1,3})(?!\.\d)s?\b"
    rf"{_NOT_AGE_AFTER}(?:\s*(?:and|or)\s*(?:over|above|older|under))?|"
    r"\b(\d{1,3})\s*(?:\+(?![\w.])|(?:and over|or over|and above|or older|and older|plus|and up(?:wards)?|"
    r"or more|upwards|onwards)\b)|"
    # "from age 50", "from the age of 60", "age 50 onwards"
    r"\bfrom (?:the )?age (?:of )?(\d{1,3})\b|\bage[ds]? (\d{1,3}) (?:onwards|upwards|and up)\b|"
    # a verb that starts a rule at an age: "kicks in at 40", "starts at 50", "applies from 50", "begins
    # at 60", "only at 40", "not until 50", "once they're 50"; a bare "from 50" unless it is a change
    # ("down from 80", "from 3 to 5")
    r"\b(?:kicks?|kicking|comes?|coming|cuts?|cutting) in (?:at|from|after) "
    r"(?:(?:the )?age (?:of )?)?(\d{1,3})\b"
    rf"{_NOT_AGE_AFTER}(?!\s*(?:-|–|to)\s*\d)|"
    r"\b(?:starts?|starting|started|begins?|beginning|applies|apply|applying|valid|eligible|only|just|triggers?|"
    r"triggered|counts?|relevant|available) (?:at|from|after) (?:(?:the )?age (?:of )?)?(\d{1,3})\b"
    rf"{_NOT_AGE_AFTER}(?!\s*(?:-|–|to)\s*\d)|"
    r"\bnot (?:until|till|before) (?:(?:the )?age (?:of )?)?(\d{1,3})\b"
    rf"{_NOT_AGE_AFTER}|"
    r"\bonce (?:they'?re|they are|you'?re|people are|patients are|over|aged) (\d{1,3})\b"
    rf"{_NOT_AGE_AFTER}|"
    r"(?<!down )(?<!up )(?<!rose )(?<!risen )(?<!fell )(?<!dropped )(?<!fallen )(?<!gone )(?<!went )"
    r"(?<!changed )(?<!increased )(?<!decreased )(?<!moved )(?<!come )(?<!came )(?<!referred )"
    r"\bfrom (\d{1,3})\b(?!\.\d)"
    rf"{_NOT_AGE_AFTER}(?!\s*(?:-|–|to|until|till)\s*\d)(?!\s*(?:am|pm|:)\b)",
    re.IGNORECASE,
)
#: The youngest age any NG12 criterion bounds ("aged 16 and over", 1.x; its other bounds are 18, 25,
#: 30, 40, 45, 50, 55 and 60): an "under/over N" below it, beside a measured test, is a cut-off.
YOUNGEST_AGE_BOUND = 16
#: Words just before an "over/below N" that make it a test result, not an age ("FIT came back
#: below 10", "platelets over 400").
_RESULT_BEFORE = re.compile(
    rf"\b({'|'.join(_TEST_WORDS.values())}|came back|result|level|count|score|reading|value)\b"
    r"[^.?!,;]{0,12}$|"
    # "FIT only counts as positive above 20": what makes a result positive is the test's cut-off
    rf"\b({'|'.join(_TEST_WORDS.values())})\b[^.?!,;]{{0,12}}\b"
    r"(counts?|counted|classed|classes|is|are|read) as (positive|abnormal|raised|high|significant)\s*$",
    re.IGNORECASE,
)
#: "only"/"just" earlier in the same clause makes an age the only one NG12 allows ("X only triggers
#: a 2WW from age 60": nothing below 60).
_ONLY = re.compile(r"(?<!not )\b(only|just|solely|exclusively)\b[^.?!;,]*$", re.IGNORECASE)
#: An age limit named as a rule without a test: "the (age) threshold for visible haematuria is 55"
#: (a test's threshold, "the FIT cut-off is 20", is a `_THRESHOLD`).
_AGE_LIMIT = re.compile(
    r"\b(?:age (?:threshold|cut-?off|limit|cut off)|threshold|cut-?off|cut off)\b(?P<mid>[^.?!\d]{0,60}?)"
    r"\b(?:is|of|=|at)\s+(?P<num>\d{1,3})\b(?!\s*(?:[./]\d|mm|cm|kg|%|iu|u/|ng|micro|µ|ug|g/|mmol|x|days?|"
    r"weeks?|months?|hours?|points?))",
    re.IGNORECASE,
)
#: The patient's age: "a 65 year old", "65-year-old", "aged 65 man", "she is 65", "patient aged 65".
_PATIENT_AGE = re.compile(
    r"\b(?:a|an|my|the|this|our)\s+(\d{1,3})[- ]?(?:years?|yrs?|y)[- ]?old|"
    r"\b(\d{1,3})[- ]?(?:years?|yrs?|y)[- ]?old|"
    r"\b(\d{1,3})\s*(?:yo|y/o)\b|\b(?:man|woman|patient|pt|person|he|she|boy|girl|child|lady|gentleman)\s+"
    r"(?:is |was |who is )?aged\s+(\d{1,3})\b|\b(?:he|she|they|patient|pt)\s+(?:is|'s|are|was)\s+(\d{1,3})\b",
    re.IGNORECASE,
)
_COUNT = r"\d+|one|two|three|four|six|an?"
_INTERVAL = re.compile(
    r"(?:\b(?P<word>within|in|after|for|lasting|longer than|more than|over|at least|persist\w* for|every|"
    r"up to)\s+|"
    # "> 6 months", ">6 months": more than
    r"(?P<gt>>)\s*)"
    rf"(?P<count>{_COUNT})\s*(?P<qual>(?:working|business|calendar|clear)\s+)?"
    r"(?P<span>hours?|hrs?|h|days?|weeks?|wks?|months?|mths?|years?|yrs?)\b|"
    # a duration named as a rule: "the 3-week rule", "NG12's 6-week cut-off" (a "3-week cough"
    # may be the patient's)
    rf"\b(?P<count2>{_COUNT})[- ](?P<span2>hour|day|week|month)s?\s+(?=(?:rule|criterion|cut-?off|threshold|"
    r"limit|window|target)\b)|"
    # working days are always a deadline, never how long a symptom lasted: "gives us 2 working days"
    rf"\b(?P<count3>{_COUNT})\s+(?P<qual3>working|business)\s+(?P<span3>days?)\b",
    re.IGNORECASE,
)
#: A duration inside a condition ("only if they've been there over 6 weeks") is the rule's, even
#: after "been" or "had".
_CONDITION = re.compile(r"\b(if|unless|once|until|only when|provided)\b[^.?!,]{0,40}$", re.IGNORECASE)
#: The patient's history: "has had a cough for 3 weeks", "lost weight over 2 months".
_PATIENT_DURATION = re.compile(
    r"\b(has had|had|having|has been|been|lost|losing|gained|started|began|ongoing|going on)\b"
    r"[^.?!,]{0,40}$",
    re.IGNORECASE,
)
#: A size, weight or proportion stated as a rule ("a lump over 5 cm", "weight loss of 10%").
_MEASURE_CLAIM = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)\s*(mm|cm|kg|%|per ?cent)(?!\w)", re.IGNORECASE)
#: ... but a patient's own measurement ("lost 8 kg", "a 12 mm mole", "it measures 3 cm").
_PATIENT_MEASURE = re.compile(
    r"\b(lost|losing|gained|measur\w*|his|her|their|the patient'?s|pt'?s|has an?|had an?|with an?|an?|is|was)"
    r"\b[^.?!,]{0,15}$",
    re.IGNORECASE,
)
_URGENCY = re.compile(r"\b(immediate(?:ly)?|same[- ]day|emergency|straight to a&e)\b", re.IGNORECASE)
#: A referral route claimed for a symptom ("kids with petechiae go on the 2ww pathway").
_ACTION = re.compile(
    r"\b(2 ?ww|two[- ]week[- ]wait|2[- ]week[- ]wait|suspected cancer pathway|very urgent|non-urgent|"
    r"routine(?:\s+[\w/&-]+){0,3}?\s+referral|refer\w*\s+(?:[\w/&-]+\s+){0,3}?routinely)\b",
    re.IGNORECASE,
)
_ACTION_TEXT = {"very urgent": "very urgent", "non-urgent": "non-urgent", "routine referral": "non-urgent"}
#: The actions (ng12_common.actions) each route claimed names, as NG12's "Terms used in this
#: guideline" define them: the suspected cancer pathway (2-week wait) and urgent (within 2 weeks),
#: very urgent (within 48 hours), non-urgent.
ROUTE_ACTIONS: dict[str, frozenset[str]] = {
    "suspected cancer pathway": frozenset({"suspected_cancer_pathway_referral", "urgent_investigation"}),
    "very urgent": frozenset({"very_urgent_referral", "very_urgent_investigation"}),
    "non-urgent": frozenset({"non_urgent_referral", "non_urgent_investigation"}),
}
_SCAN = re.compile(rf"\b(?:an?\s+|the\s+)?({'|'.join(_SCANS.values())})\b", re.IGNORECASE)
_UNITS = {"hr": "hour", "h": "hour", "wk": "week", "mth": "month", "yr": "year"}
_WORD_NUMBERS = {"one": "1", "two": "2", "three": "3", "four": "4", "six": "6", "a": "1", "an": "1"}


@dataclass(frozen=True)
class Claim:
    kind: ClaimKind
    text: str  # as the user wrote it: "CA125 above 20"
    value: str  # what NG12's text must contain: "20", "50", "6 weeks", "immediate", "ct"
    subject: str | None = None  # a threshold's test ("ca125"); an age's direction ("over", "under");
    # an interval's kind ("deadline": within 24 hours; "duration": for 3 weeks)
    ages: tuple[int, int] | None = None  # the ages a threshold is claimed for ([60, 70): "60-69 year olds")
    only: bool = False  # an age claimed as the only one ("only from age 60", "only if 55+")


def is_injection(message: str) -> bool:
    return bool(_INJECTION.search(message))


#: "What does NG12 say?", "does NICE recommend ...?": a question about NG12, not an assertion.
_ASKING_BEFORE = re.compile(
    r"\b(does|do|did|would|will|can|could|should|might|may|what|which|how|when|where|why|whether|if)\s+$",
    re.IGNORECASE,
)


#: A bare "say" ending in a question is a question with its "does" dropped: "NG12 say refer?".
_BARE_SAY_QUESTION = re.compile(r"\bsay\b[^.!?]{0,60}\?", re.IGNORECASE)
#: A patient written as a vignette before a result ("45M", "72yo", "a 60 year old", "pt", "my patient").
_VIGNETTE_PATIENT = re.compile(
    r"\b(\d{1,3}\s?(?:m|f|yo|y/o|yrs?|years?(?: old)?)|pt|patient|man|woman|lady|gentleman|boy|girl)\b",
    re.IGNORECASE,
)


def asserts_guideline(message: str) -> bool:
    """The message states something as NG12's (a claim to check), rather than only asking
    ("what does NG12 say about ...?", "NG12 say refer?" and "does NICE recommend ...?" ask)."""
    return any(
        not _ASKING_BEFORE.search(message[: m.start()]) and not _asks_with_bare_say(message, m)
        for m in _ASSERTS.finditer(message)
    )


def _asks_with_bare_say(message: str, m: re.Match[str]) -> bool:
    say = re.search(r"\bsay\b", m.group(0), re.IGNORECASE)
    return say is not None and _BARE_SAY_QUESTION.match(message, m.start() + say.start()) is not None


#: Words that compare a test's value with a threshold ("above", ">", "cut-off").
_COMPARED = re.compile(
    r"[<>≤≥=]|\b(of|above|over|greater|more|higher|exceeding|at least|below|under|less|lower|"
    r"threshold|cut[- ]?off|limit)\b",
    re.IGNORECASE,
)


#: A patient named just after a bare result: "plt 520 in a 61yo", "PSA 3.9 for this 65M".
_PATIENT_AFTER = re.compile(
    r"\s*(?:\w+\s*)?\b(?:in|for|from|on)\s+(?:a|an|this|my|our|the|his|her)?\s*"
    r"(?:\d{1,3}\s?(?:yo|y/o|m|f|yrs?|years?|-year)\b|patient|pt|man|woman|lady|gentleman|boy|girl|him|her)",
    re.IGNORECASE,
)


def _vignette_value(message: str, m: re.Match[str]) -> bool:
    """A test and a bare number (no comparison, no threshold word) after a patient in the same
    sentence, or just before one, is that patient's result ("45M with ED, PSA 3.0", "plt 520 in a
    61yo"), not a claim about NG12."""
    if _COMPARED.search(message[m.end("test") : m.start("num")]):
        return False
    sentence = re.split(r"[.!?]\s", message[: m.start()])[-1]
    if _PATIENT_AFTER.match(message, m.end("num")) and not asserts_guideline(sentence):
        return True  # "plt 520 in a 61yo, NG12 says ..." (not "NG12 says PSA 3.0 for a 45 year old")
    return _VIGNETTE_PATIENT.search(sentence) is not None


def _test_key(word: str, table: dict[str, str]) -> str | None:
    w = word.lower()
    return next((k for k, pat in table.items() if re.fullmatch(pat, w, re.IGNORECASE)), None)


#: The patient's age written as a vignette: "65M", "35 F", "72yo", "a 60 year old".
_VIGNETTE_AGE = re.compile(r"\b(\d{1,3})\s?(?:[MF]\b|(?i:yo|y/o|yrs?|[- ]?years?[- ]old|[- ]?year-old)\b)")


def _vignette_age(message: str) -> int | None:
    """The one patient age a message gives (None when it gives none, or several)."""
    ages = {int(m.group(1)) for m in _VIGNETTE_AGE.finditer(message)}
    return next(iter(ages)) if len(ages) == 1 else None


def _patient_ages(message: str) -> set[str]:
    return {next(g for g in m.groups() if g) for m in _PATIENT_AGE.finditer(message)}


_SENTENCE_END = re.compile(r"(?<=[.?!])\s+(?=\S)")
#: What follows "so", "therefore" is the writer's own conclusion or plan ("..., so I'll refer
#: routinely?"), not something claimed as NG12's.
_CONCLUSION = re.compile(
    r"(?:,\s*|\s+)(?:so|therefore|hence|which means)\b(?!\s+(?:that|as|long|far))"
    # ... unless what follows says it is NG12's: "he's an adult so ng12 = very urgent FBC"
    r"(?![^.?!]*\b(?:ng12|nice)\s*(?:=|:|says|states|recommends|wants|gives))[^.?!]*",
    re.IGNORECASE,
)


def claimed_text(message: str) -> str:
    """The part of a message that asserts something as NG12's: the sentences that assert (with
    the sentence before a bare tag such as "Is that right?" or "Which recommendation says
    that?"), without the writer's conclusions ("so I'll refer routinely"). Sentences that only
    describe the patient ("Mouth ulcer 4 weeks in a 39M.") are facts, not claims."""
    sentences = _SENTENCE_END.split(message.strip())
    kept: list[str] = []
    for i, sentence in enumerate(sentences):
        if not asserts_guideline(sentence):
            continue
        if i > 0 and len(re.findall(r"[A-Za-z0-9]+", sentence)) <= 5 and sentences[i - 1] not in kept:
            kept.append(sentences[i - 1])
        kept.append(sentence)
    text = " ".join(kept) if kept else message
    return _CONCLUSION.sub("", text)


def claims(message: str) -> list[Claim]:
    """The claims a message makes about NG12 (empty unless it asserts something as NG12's), read
    from the part that asserts (`claimed_text`); a number the whole message gives as the
    patient's stays a patient fact."""
    if not asserts_guideline(message):
        return []
    patient_ages = _patient_ages(message)
    patient_age = _vignette_age(message)
    named = _measured_tests(message)
    message = claimed_text(message)
    out: list[Claim] = []
    taken: list[tuple[int, int]] = []
    bare: list[Claim] = []  # "PSA 5": a test and a number, no comparison
    for m in _THRESHOLD.finditer(message):
        if _PATIENT_RESULT.search(message[: m.start()]) or _vignette_value(message, m):
            continue
        if re.search(r"\b(was|were)\b", message[m.end("test") : m.start("num")], re.IGNORECASE) and not (
            _CONDITION.search(message[: m.start()])
        ):  # "platelets were over 600" is the patient's result; "if FIT was over 10" a rule
            continue
        key = _test_key(m.group("test"), _TEST_WORDS)
        out.append(Claim("threshold", m.group(0).strip(), m.group("num"), key))
        taken.append(m.span())
        if not _COMPARED.search(message[m.end("test") : m.start("num")]):
            bare.append(out[-1])
    for claim, where in _named_thresholds(message, named, taken, patient_age):
        out.append(claim)
        taken.append(where)
    for m in _AGE_RULE.finditer(message):
        value = next(g for g in m.groups() if g)
        if any(a <= m.start() < b for a, b in taken) or (
            value in patient_ages and m.group(0).lower().startswith("aged")
        ):
            continue
        verb_rule = not re.match(r"(?:over|above|older|under|below|younger|aged)\b|\d", m.group(0), re.I)
        if _RESULT_BEFORE.search(message[: m.start()]) and not (
            verb_rule and int(value) >= YOUNGEST_AGE_BOUND
        ):
            continue  # "FIT came back below 10" (but "the FIT rule starts at 50" is an age)
        if int(value) < YOUNGEST_AGE_BOUND and re.search(r"or more|\+|plus", m.group(0), re.I) and not named:
            continue  # "4 or more": no NG12 age bound is that low, so it is a count (`_count_claims`)
        if int(value) < YOUNGEST_AGE_BOUND and len(named) == 1 and not m.group(0).lower().startswith("aged"):
            # "PSA 3.8, that's under 4": no NG12 age bound is that low, so it is the test's cut-off
            out.append(Claim("threshold", m.group(0).strip(), value, next(iter(named))))
            continue
        if 0 < int(value) <= 120:
            word = m.group(0).lower()
            direction = "under" if re.match(r"(under|below|younger)", word) else "over"
            only = _ONLY.search(message[max(0, m.start() - 60) : m.start()]) is not None or bool(
                re.match(r"(only|just|not)\b", word)
            )
            out.append(Claim("age", m.group(0).strip(), value, direction, only=only))
    for m in _AGE_LIMIT.finditer(message):
        value = m.group("num")
        tested = re.search(rf"\b({'|'.join(_TEST_WORDS.values())})\b", m.group("mid"), re.IGNORECASE)
        if tested or any(a <= m.start() < b or m.start() <= a < m.end() for a, b in taken):
            continue
        if 16 <= int(value) <= 100 and value not in patient_ages:
            out.append(Claim("age", m.group(0).strip(), value, "over"))
            taken.append(m.span())
    for m in _INTERVAL.finditer(message):
        count: str
        span: str
        qual: str
        before = message[: m.start()]
        if _PATIENT_DURATION.search(before) and not _CONDITION.search(before):
            continue
        said, count, span, qual = (
            (m.group("word") or "more than", m.group("count"), m.group("span"), m.group("qual") or "")
            if m.group("count")
            else ("", m.group("count2"), m.group("span2"), "")
            if m.group("count2")
            else ("within", m.group("count3"), m.group("span3"), m.group("qual3"))
        )
        number = _WORD_NUMBERS.get(count.lower(), count)
        unit = _UNITS.get(span.lower().rstrip("s"), span.lower().rstrip("s"))
        unit = f"{qual.strip().lower()} {unit}".strip()
        kind = "deadline" if said.lower() in ("within", "in", "after", "every", "up to") else "duration"
        out.append(Claim("interval", m.group(0).strip(), f"{number} {unit}", kind))
    for m in _URGENCY.finditer(message):
        out.append(Claim("urgency", m.group(0), m.group(1).lower().removesuffix("ly")))
    for m in _ACTION.finditer(message):
        phrase = m.group(1).lower()
        if "routine" in phrase:  # "routine referral", "a routine ENT referral", "refer routinely"
            phrase = "routine referral"
        out.append(Claim("action", m.group(0), _ACTION_TEXT.get(phrase, "suspected cancer pathway")))
    for m in _MEASURE_CLAIM.finditer(message):
        if any(a <= m.start() < b for a, b in taken) or _PATIENT_MEASURE.search(message[: m.start()]):
            continue
        unit = {"per cent": "%", "percent": "%"}.get(m.group(2).lower(), m.group(2).lower())
        out.append(Claim("measure", m.group(0).strip(), f"{m.group(1)} {unit}"))
    counts = _count_claims(message, taken)
    # "3+ symptoms", "5 or more": a count, not an age (no NG12 age bound is that low)
    counted = {c.text.lower() for c in counts}
    out = [
        c
        for c in out
        if not (c.kind == "age" and int(c.value) < YOUNGEST_AGE_BOUND and c.text.lower() in counted)
    ]
    out += counts
    for m in _SCAN.finditer(message):
        key = _test_key(m.group(1), _SCANS)
        if key is not None:
            out.append(Claim("test", m.group(0).strip(), key, key))
    for m in _UNIVERSAL.finditer(message):  # "everyone with ...", "always", "never": over-broad rules
        never = re.match(r"(never|no ?one|nobody|no patients?)", m.group(0), re.IGNORECASE) is not None
        clause = re.match(r"[^,.;?!]{0,80}", message[m.start() :])
        said = re.sub(
            r"\s+(right|correct|yes|isn'?t it|is that (right|correct|true))$",
            "",
            clause.group(0).strip() if clause else "",
        )
        out.append(Claim("universal", said or m.group(0).strip(), "never" if never else "all"))
        break
    for m, group in group_mentions(message):  # checked only together with the other claims
        out.append(Claim("population", m.group(0).strip(), group))
    out += _unnamed_test_claims(message)
    excluded = _EXCLUDES.search(message)
    # a bare value beside a compared one for the same test is the patient's result: "PSA 5 at 58,
    # that's over 3.5" claims 3.5, not 5
    compared = {c.subject for c in out if c.kind == "threshold" and c not in bare}
    out = [c for c in out if not (c in bare and c.subject in compared)]
    if excluded is not None:  # "a normal X-ray excludes cancer"
        out.append(Claim("excludes", excluded.group(0).strip(), "excludes"))
    waived = _WAIVED.search(message)
    if waived is not None:  # "no need to repeat FIT"
        out.append(Claim("waived", waived.group(0).strip(), "waived"))
    return out


# --- counts and scores ---------------------------------------------------------------------------
#: After a count, what makes it a measure, a duration or a test's value instead ("7 mm or more",
#: "at least 3 weeks", "at least 10 micrograms").
_NOT_COUNT_AFTER = (
    r"(?!\s*(?:mm|cm|kg|%|years?|y/?o|days?|weeks?|wks?|months?|mths?|hours?|hrs?|mg|iu|u/|ng|micrograms?|"
    r"µg|ug|g/|mmol|x ?10|per ?cent|points? each|-point))"
)
#: A count or score stated as a rule: "5 or more", "at least 3", "≥3", "a score of 4 or above",
#: "needs 5 points", "the score threshold is 5" (a bare "score of 4" may be the patient's).
_COUNT_CLAIM = re.compile(
    r"(?:\b(?:at least|a minimum of|minimum(?: of)?|no fewer than|not less than)\s+|(?:>=|≥)\s*)"
    rf"(?P<a>\d{{1,2}})\b{_NOT_COUNT_AFTER}|"
    rf"(?<![\w.-])(?P<b>\d{{1,2}})\s*(?:or more|or above|or higher|or greater|or over|\+(?![\w.])|plus\b)"
    rf"{_NOT_COUNT_AFTER}|"
    r"\b(?:score|scoring|total)\s+(?:threshold\s+|cut[- ]?off\s+)?"
    r"(?:of|is|=|at|needs? to be|must be|over|above)?"
    rf"\s*(?P<c>\d{{1,2}})\b(?!\s*(?:or more|or above|or higher|\+)){_NOT_COUNT_AFTER}|"
    rf"(?<![\w.-])(?P<d>\d{{1,2}})\s*points?\b(?!\s*each)(?!-)",
    re.IGNORECASE,
)
#: A count that is the patient's: "she scored 4", "he has 5 or more moles", "that's 4 points".
_PATIENT_COUNT = re.compile(
    # "has 5 or more moles" is the patient's; "has to be 4 or more" is a rule
    r"\b(scored|scores|has(?! to)|had(?! to)|have(?! to)|got(?! to)|gets|getting|with|his|her|their|pt'?s|"
    r"patient'?s|came to|comes to|"
    r"adds up to|totals?|that'?s|it'?s|he'?s|she'?s|they'?re)\b[^.?!,;]{0,20}$",
    re.IGNORECASE,
)
#: Words near a count that make it a score ("score of 20 or more"): then it may be above any age.
_SCORE_WORD = re.compile(r"\b(score|scoring|points?|checklist|total)\b", re.IGNORECASE)


def _count_claims(message: str, taken: list[tuple[int, int]]) -> list[Claim]:
    """Counts and scores stated as NG12's rule ("you need 5 or more to 2ww", "a score of at least
    4"); checked by `check` against the counts and scores the recommendations on the topic state.
    A bare score ("a score of 4") beside a compared one ("... NG12 says 5 or more") is the
    patient's; a count a number of years could be ("55 or more") is an age unless a score word is
    near."""
    compared: list[Claim] = []
    bare: list[Claim] = []
    for m in _COUNT_CLAIM.finditer(message):
        if any(a <= m.start() < b or m.start() <= a < m.end() for a, b in taken):
            continue
        if _PATIENT_COUNT.search(message[: m.start()]):
            continue
        group = next(g for g in ("a", "b", "c", "d") if m.group(g))
        value = m.group(group)
        near = message[max(0, m.start() - 30) : m.end() + 15]
        if int(value) >= YOUNGEST_AGE_BOUND and not _SCORE_WORD.search(near):
            continue
        claim = Claim("count", m.group(0).strip(), value)
        (bare if group in ("c", "d") else compared).append(claim)
    if compared:
        return compared
    return bare


#: A count or score NG12 states: "2 or more of the following", "a ... score of 3 or more".
_STATED_COUNT = re.compile(
    r"(?<![\w.-])(\d{1,2}) or more\b(?!\s*(?:mm|cm|kg|%|years?|days?|weeks?|months?))|\bscore of (\d{1,2})\b|"
    r"\bat least (\d{1,2})\b(?!\s*(?:mm|cm|kg|%|years?|days?|weeks?|months?|micrograms?))",
    re.IGNORECASE,
)


def stated_counts(rec: ServedRecommendation) -> set[str]:
    """The counts and scores a recommendation states, in its text or its criteria (a score's
    minimum points, the number of findings of "2 or more of the following")."""
    out = {next(g for g in m.groups() if g) for m in _STATED_COUNT.finditer(rec.text)}
    if rec.criteria is not None:
        for node in iter_nodes(rec.criteria):
            if isinstance(node, Score):
                out.add(str(node.min_points))
            elif isinstance(node, AtLeast) and node.n >= 2:
                out.add(str(node.n))
    return out


# --- thresholds stated apart from the test they belong to ------------------------------------------
#: The unit NG12 states each measured test's threshold in (1.3.2 FIT "micrograms of haemoglobin per
#: gram of faeces", 1.5.7 CA125 "IU/ml", table 1 PSA "micrograms/litre", 1.x platelets
#: "x 10^9/litre"): a number with one of these units is that test's, wherever the test is named.
_UNIT_TESTS: dict[str, str] = {
    r"(?:µg|ug|mcg|micrograms?)\s*(?:/|per)\s*g(?:ram)?\b": "fit",
    r"i?u/ml": "ca125",
    r"(?:µg|ug|mcg|micrograms?)\s*/\s*l(?:itre)?\b|ng/ml": "psa",
    r"x\s*10\^?9": "platelets",
}
_UNIT = rf"(?P<unit>{'|'.join(_UNIT_TESTS)})?"
#: "the NG12 threshold for 2ww is 20 ug/g", "NICE cut off for arranging USS is 50"
_THRESHOLD_WORD = re.compile(
    r"\b(?:threshold|cut[- ]?off|trigger level)\b(?P<mid>[^.?!]{0,50}?)\b(?:is|was|are|were|be|of|=|at)\s+"
    r"(?:above |over |at least |more than |greater than |>=? )?"
    rf"(?P<num>\d+(?:\.\d+)?)(?!\s*(?:years?|y/?o|weeks?|days?|months?|hours?|mm|cm|kg|%))\s*{_UNIT}",
    re.IGNORECASE,
)
#: "refer above 3.5": a compared number that is not an age (a decimal, or a test's unit).
_COMPARED_VALUE = re.compile(
    r"\b(?:above|over|more than|greater than|at least|>=?)\s+"
    rf"(?P<num>\d+\.\d+(?!\s*(?:mm|cm|kg|%))|\d+(?=\s*(?:{'|'.join(_UNIT_TESTS)})))\s*{_UNIT}",
    re.IGNORECASE,
)
#: The ages a threshold is claimed for: "for 60-69 year olds", "in 50 to 59s", "aged 70-79".
_AGE_BAND = re.compile(
    r"\b(?:for|in|at|aged|among)\s+(?:the\s+|people\s+|men\s+)?(\d{1,3})\s*(?:-|–|to)\s*(\d{1,3})\b", re.I
)
_MEASURED_WORD = re.compile(rf"\b({'|'.join(_TEST_WORDS.values())})\b", re.IGNORECASE)


def _measured_tests(message: str) -> set[str]:
    """The measured tests (PSA, FIT, CA125, platelets, ...) a message names anywhere."""
    keys = {_test_key(m.group(1), _TEST_WORDS) for m in _MEASURED_WORD.finditer(message)}
    return {k for k in keys if k is not None and k != "checklist score"}


#: A threshold said to be the patient's age band's: "the cut-off for his age", "for her age group".
_FOR_PATIENTS_AGE = re.compile(
    r"\bfor (?:his|her|their|this (?:patient|man|woman)'?s?|the patient'?s|pt'?s|my (?:patient|pt)'?s) age\b"
    r"(?: group| band| range)?",
    re.IGNORECASE,
)


def _named_thresholds(
    message: str, named: set[str], taken: list[tuple[int, int]], patient_age: int | None = None
) -> list[tuple[Claim, tuple[int, int]]]:
    """Thresholds stated apart from their test: the test is the one named between the threshold
    word and the number, else the one the unit belongs to, else the only measured test the message
    names ("FIT came back at 14. NG12 threshold for 2ww is 20 ug/g"). A threshold word with an age
    ("the cut-off for dysphagia is 55", no test, no unit) is left to the age rules."""
    out: list[tuple[Claim, tuple[int, int]]] = []
    found = [*_THRESHOLD_WORD.finditer(message), *_COMPARED_VALUE.finditer(message)]
    for m in found:
        if any(a <= m.start() < b or m.start() <= a < m.end() for a, b in taken):
            continue
        before = message[: m.start()]
        if _PATIENT_RESULT.search(before) and not asserts_guideline(before[-40:]):
            continue
        mid = m.groupdict().get("mid") or ""
        in_mid = _measured_tests(mid)
        unit = m.group("unit") or ""
        by_unit = next((t for pat, t in _UNIT_TESTS.items() if unit and re.fullmatch(pat, unit, re.I)), None)
        test = next(iter(in_mid), None) if len(in_mid) == 1 else by_unit
        for_patient_age = _FOR_PATIENTS_AGE.search(mid)
        # "the cut-off for his age is 3.0" is the test's (a decimal is never an age bound)
        about_age = (
            not for_patient_age
            and "." not in m.group("num")
            and re.search(r"\bage\b", f"{message[max(0, m.start() - 5) : m.start()]}{mid}", re.I)
        )
        if test is None and len(named) == 1 and not about_age:
            test = next(iter(named))
        if test is None:
            continue
        band = _AGE_BAND.search(message, m.end(), min(len(message), m.end() + 40))
        ages = (int(band.group(1)), int(band.group(2)) + 1) if band else None
        if ages is None and for_patient_age and patient_age is not None:
            ages = (patient_age, patient_age + 1)  # the band of the patient's age decides
        # the span taken covers the age band too: "aged 50-59" is the threshold's, not an age rule
        where = (m.start(), band.end() if band else m.end())
        out.append((Claim("threshold", m.group(0).strip(), m.group("num"), test, ages), where))
    return out


def _band_holds(rec: ServedRecommendation, claim: Claim) -> bool | None:
    """Whether an age-banded table (PSA by age, 1.6.3) gives the claimed value for the ages claimed
    (None when the recommendation has no such table)."""
    if rec.criteria is None or claim.ages is None:
        return None
    lo, hi = claim.ages
    bands = [b for node in iter_nodes(rec.criteria) if isinstance(node, TestByAge) for b in node.bands]
    if not bands:
        return None
    overlapping = [
        b for b in bands if (b.age_gte is None or b.age_gte < hi) and (b.age_lt is None or lo < b.age_lt)
    ]
    return bool(overlapping) and all(
        b.value is not None and b.value == float(claim.value) for b in overlapping
    )


# --- tests NG12 never names, and results claimed to exclude cancer ----------------------------------
#: A test written as an abbreviation (CA19-9, CEA, AFP, LDH) in a test's place: after a verb of
#: ordering or recommending ("recommends a CA19-9") or before a test word ("CEA level").
_TEST_TOKEN = r"(?-i:[A-Z]{2,5}\s?-?\d{0,3}(?:-\d{1,2})?)"
_UNNAMED_TEST = re.compile(
    rf"\b(?:recommends?|recommended|offer|order|request|check|do|send|arrange|use|needs?|wants?)\s+"
    rf"(?:an?\s+|the\s+|a\s+serum\s+)?(?P<a>{_TEST_TOKEN})(?![\w-])|"
    rf"\b(?P<b>{_TEST_TOKEN})\s+(?:test|level|levels|assay|marker|blood test|cut-?off|threshold)\b",
)
#: Abbreviations that are not tests, or tests NG12 writes out (the claim check looks for them in
#: NG12's text by their written-out form: `TESTS`).
_NOT_A_TEST = re.compile(
    r"(?i:ng\d+|nice|gp|nhs|a&e|ae|2ww|uk|ok|mdt|ers|pt|pts|ct|mri|cxr|uss|ogd|fbc|fit|qfit|psa|ca ?-?125|"
    r"hb|plt|ldh?s?|it|i|ae)$"
)


def _unnamed_test_claims(message: str) -> list[Claim]:
    """A test the message claims NG12 uses ("NG12 recommends a CA19-9"), checked by `check`
    against the text of every recommendation: one NG12 never names is contradicted."""
    out: list[Claim] = []
    for m in _UNNAMED_TEST.finditer(message):
        token = (m.group("a") or m.group("b") or "").strip()
        if not token or _NOT_A_TEST.match(token) or _test_key(token, {**_SCANS, **_TEST_WORDS}):
            continue
        if token not in {c.value for c in out}:
            out.append(Claim("unnamed_test", token, token))
    return out


#: "a normal X-ray excludes cancer", "negative FIT so cancer is ruled out"
_EXCLUDES = re.compile(
    r"\b(?:normal|negative|clear|unremarkable)\b[^.?!]{0,80}?\b(?:exclud\w*|rul(?:e|es|ed|ing) out)\b|"
    r"\b(?:exclud\w*|rul(?:e|es|ed|ing) out)\b[^.?!]{0,60}?\b(?:normal|negative|clear)\b",
    re.IGNORECASE,
)
#: A result claimed to make another test unnecessary ("no need to repeat FIT", "doesn't need another
#: CA125"): checked like a result claimed to exclude cancer.
_WAIVED = re.compile(
    r"\b(?:no need|(?:do(?:es)?n'?t|do(?:es)? not|won'?t|wouldn'?t) need)\s+(?:to\s+|for\s+)?"
    r"(?:repeat(?:ing)?|re-?do(?:ing)?|re-?test(?:ing)?|re-?check(?:ing)?|do (?:it|another|a repeat)|another|"
    r"a repeat|a second)\b(?:\s+(?:the|a|an|his|her|their)\b)?(?:\s+(?!then\b|now\b|again\b)[\w-]+)?",
    re.IGNORECASE,
)
#: NG12's words if it did let a result stand in for a repeat test (it never does).
_WAIVES_TEXT = re.compile(
    r"\b(no need to repeat|need not be repeated|does not need to be repeated|do not repeat)\b", re.IGNORECASE
)
#: A recommendation on what an earlier negative or normal result changes (1.3.1: "FIT should be
#: offered even if the person has previously had a negative FIT result ...").
_EARLIER_RESULT = re.compile(r"\b(?:negative|normal)\b[^.]{0,40}\bresults?\b|\bpreviously\b", re.IGNORECASE)
_RULES_OUT = re.compile(r"\b(exclud\w*|rul(e|es|ed) out)\b[^.]{0,40}\bcancer", re.IGNORECASE)
_FALSE_NEGATIVE = re.compile(r"false[- ]negative", re.IGNORECASE)


def _on_earlier_results(claim: Claim, every: list[ServedRecommendation]) -> list[ServedRecommendation]:
    """What NG12 says about an earlier result of the test a claim names: the recommendations naming
    the test and an earlier negative or normal result first, then those on false-negative results."""
    tests = named_tests(claim.text).values()
    earlier = [
        r
        for r in every
        if _EARLIER_RESULT.search(r.text) and any(re.search(t, r.text, re.IGNORECASE) for t in tests)
    ]
    return [*earlier, *(r for r in every if _FALSE_NEGATIVE.search(r.text) and r not in earlier)]


def for_patient(recs: list[ServedRecommendation], age: int | None) -> list[ServedRecommendation]:
    """The recommendations for the patient's age group: a claim about a 3-year-old is not made
    by the adults' recommendation (NG12: children are under 16, adults 18 and over; young people
    of 16 to 24 may use either pathway)."""
    if age is None:
        return recs

    groups = (*age_groups(age), "any")
    kept = [r for r in recs if str(r.population.get("age_group") or "any") in groups]
    return kept or recs


#: A rule claimed for everyone with the symptoms ("everyone with haemoptysis", "all patients with
#: dyspepsia", "always", "any adult with", "at any age") or for no one ("never", "no one under 50").
_UNIVERSAL = re.compile(
    r"\b(every(?:one|body)?|all (?:patients|people|adults|children|kids|women|men|those|cases|pts)|"
    r"always|any ?(?:one|body)|any (?:adult|patient|person|woman|man|child|kid|pt)s?|"
    r"regardless of (?:their )?age|at any age|whatever (?:their )?age|irrespective of (?:their )?age|"
    r"no matter (?:what |their |how old)\w*|never|no ?one|nobody|no patients?)\b",
    re.IGNORECASE,
)
#: Ages a universal claim is probed at, per group it names.
_PROBE_AGES = {
    "adults": (18, 25, 30, 35, 40, 45, 50, 55, 60, 65, 75, 85),
    "children": (1, 5, 10, 15),
    "any": (5, 15, 18, 25, 30, 35, 40, 45, 50, 55, 60, 65, 75, 85),
}


def universal_contradicted(
    found: list[Claim],
    for_symptoms: list[ServedRecommendation],
    met_at: Callable[[int], Set[str]],
    wanted: set[str],
) -> Claim | None:
    """The universal claim ("everyone with X needs a CT", "never refer X under 50") NG12 does not
    make, checked against the whole population its recommendations on those symptoms cover:
    "all": one of them (with the test, route or urgency claimed, if any) must apply at every age of
    the group claimed (within any age bound claimed), whatever else the patient has; "never": none
    of them may apply in the ages claimed. None when it holds, or no recommendation names the
    symptoms (nothing to check against). `met_at(age)`: the ids of the recommendations a patient
    with only the symptoms named meets at that age (the caller evaluates each age once)."""
    universal = next((c for c in found if c.kind == "universal"), None)
    if universal is None or not for_symptoms:
        return None
    named = [c for c in found if c.kind in ("test", "action", "urgency")]
    pool = [r for r in for_symptoms if all(_contains(r.text, c) for c in named)]
    group = next((c.value for c in found if c.kind == "population"), "any")
    ages = _PROBE_AGES.get(group, _PROBE_AGES["any"])
    for c in found:
        if c.kind == "age":
            bound = int(c.value)
            ages = tuple(a for a in ages if (a >= bound if c.subject == "over" else a < bound))
    if universal.value == "never":
        if not named and not any(c.kind == "age" for c in found):
            return None  # "never" about what? nothing to hold it against
        if any(_ages_with_allow(r, wanted, ages) for r in pool):
            return universal
        return None
    if not ages:
        return None
    if any(all(r.id in met_at(age) for age in ages) for r in pool):
        return None
    return universal


def _ages_with_allow(rec: ServedRecommendation, wanted: set[str], ages: tuple[int, ...]) -> bool:
    """The recommendation's criteria put a wanted symptom with age bounds some of these ages meet."""
    if rec.criteria is None:
        return False
    for bounds in _ages_with(rec.criteria, wanted):
        for age in ages:
            if all(age >= int(v) if d == "over" else age < int(v) for d, v in bounds):
                return True
    return False


#: Claims checked together: each may be NG12's, but not all of them in one recommendation ("a CT for
#: weight loss over 40": NG12 has weight loss at 40 and over (FIT, X-ray) and a CT at 60 and over).
_JOINT = ("age", "test", "interval", "action", "urgency", "population")


def _holds(rec: ServedRecommendation, claim: Claim, wanted: set[str]) -> bool:
    if claim.kind == "population":
        group = str(rec.population.get("age_group") or "any")
        if claim.value == "adults":
            return group in ("adults", "any")
        return group in ("children", "children_and_young_people", "any")
    if claim.kind == "age":
        bound = _age_bound_to(claim, [rec], wanted)
        return bound if bound is not None else _contains(rec.text, claim)
    return _contains(rec.text, claim)


def _joint_claim(found: list[Claim]) -> Claim:
    order = {"action": 0, "urgency": 0, "test": 1, "interval": 2, "population": 3, "age": 4}
    parts = sorted(found, key=lambda c: order.get(c.kind, 5))
    quoted = [f'"{c.text}"' for c in parts]
    return Claim("joint", ", ".join(quoted[:-1]) + f" and {quoted[-1]}", "")


_OTHER_TESTS = ["(?-i:FIT)", "fit test", "qfit", "ca[- ]?125", "psa", "full blood count", "fbc"]
_NAMED_TEST = re.compile(
    rf"\b({'|'.join([*_SCANS.values(), *_OTHER_TESTS])})\b",
    re.IGNORECASE,
)


def named_tests(message: str) -> dict[str, str]:
    """The tests a message names -> the pattern of each in NG12's text."""
    out: dict[str, str] = {}
    for m in _NAMED_TEST.finditer(message):
        key = _test_key(m.group(1), {**_SCANS, **_TEST_WORDS, "full blood count": r"full blood count|fbc"})
        if key is not None:
            out[key] = TESTS[key]
    return out


def _contains(text: str, claim: Claim) -> bool:
    t = text.lower()
    if claim.kind in ("threshold",):
        return re.search(rf"(?<![\w.]){re.escape(claim.value)}(?![\d]|\.\d)", t) is not None
    if claim.kind == "age":
        n = re.escape(claim.value)
        if claim.subject == "under":  # "under 40": NG12 must set an upper age bound at 40
            pattern = rf"\b(aged under {n}|under {n}|younger than {n}|below {n}|up to {n})\b"
        elif claim.subject == "over":  # "over 50", "50+": a lower bound at 50
            pattern = (
                rf"\b(aged {n} and over|aged {n} or over|{n} and over|{n} or over|over {n}|aged {n}\+?)\b"
            )
        else:
            pattern = rf"\b(aged {n}|{n} and over|{n} or over|over {n}|under {n}|{n} years)\b"
        return re.search(pattern, t) is not None
    if claim.kind == "interval":
        number, unit = claim.value.split(" ", 1)
        amount = rf"{re.escape(number)}\s*{re.escape(unit)}s?\b"
        if claim.subject == "deadline":  # "within 24 hours": a time by which something is done
            return re.search(rf"\b(within|in|before|by)\s+{amount}", t) is not None
        if claim.subject == "duration":  # "for 3 weeks": how long a symptom lasts
            return (
                re.search(rf"\b(for|lasting|more than|longer than|over|at least|of)\s+{amount}", t)
                is not None
            )
        return re.search(rf"\b{amount}", t) is not None
    if claim.kind == "urgency":
        return claim.value.split()[0] in t
    if claim.kind == "measure":
        number, unit = claim.value.split(" ")
        return re.search(rf"(?<![\w.]){re.escape(number)}\s*{re.escape(unit)}", t) is not None
    if claim.kind == "action":
        return claim.value in t
    return re.search(TESTS.get(claim.value, re.escape(claim.value)), t) is not None


def _table_values(rec: ServedRecommendation) -> str:
    """The numbers of an age-banded test table a recommendation refers to (PSA by age, table 1),
    which its criteria hold and its sentence does not ("above the threshold for their age")."""
    if rec.criteria is None:
        return ""
    values = [
        f"{band.value:g}"
        for node in iter_nodes(rec.criteria)
        if isinstance(node, TestByAge)
        for band in node.bands
        if band.value is not None
    ]
    return " ".join(values)


_MEASURE = re.compile(r"\d+(?:\.\d+)?\s*(?:iu/ml|micrograms?|mmol|g/l|x ?10|%)", re.I)


def _about(rec: ServedRecommendation, claim: Claim) -> bool:
    return (
        claim.subject in TESTS and re.search(TESTS[str(claim.subject)], rec.text, re.IGNORECASE) is not None
    )


def _ages_with(
    node: Criterion, wanted: set[str], inherited: frozenset[tuple[str, str]] = frozenset()
) -> list[frozenset[tuple[str, str]]]:
    """For each place a wanted symptom or finding appears in a criteria tree, the age bounds that
    must hold with it (("over", "55") for an AgeGte 55 in the same `all` branch): NG12's "aged 55
    and over, with weight loss and dyspepsia" binds 55 to dyspepsia, not to dysphagia."""
    if isinstance(node, (Symptom, Finding)):
        return [inherited] if node.concept in wanted else []
    if isinstance(node, AllOf):
        ages = {("over", str(c.value)) for c in node.of if isinstance(c, AgeGte)}
        ages |= {("under", str(c.value)) for c in node.of if isinstance(c, AgeLt)}
        inner = inherited | ages
        return [a for child in node.of for a in _ages_with(child, wanted, inner)]
    if isinstance(node, (AnyOf, AtLeast)):
        return [a for child in node.of for a in _ages_with(child, wanted, inherited)]
    if isinstance(node, Score):
        return [a for item in node.items for a in _ages_with(item.criterion, wanted, inherited)]
    return []


ages_with = _ages_with  # public: chat.answer says which age goes with a symptom


def _age_bound_to(claim: Claim, recs: list[ServedRecommendation], wanted: set[str]) -> bool | None:
    """Whether the recommendations' criteria bind the claimed age to the symptoms named (None when
    their criteria do not name those symptoms: their text decides)."""
    paths = [a for r in recs if r.criteria is not None for a in _ages_with(r.criteria, wanted)]
    if not paths:
        return None
    return any((claim.subject, claim.value) in ages for ages in paths)


def _lower_age_allowed(
    claim: Claim, found: list[Claim], recs: list[ServedRecommendation], wanted: set[str]
) -> bool:
    """An age claimed as the only one ("visible haematuria only triggers a 2WW from age 60") is
    contradicted when a recommendation on the symptoms (with the test, route or urgency claimed)
    puts them with a lower age, or with none: 1.6.4's "aged 45 and over" for visible haematuria."""
    named = [c for c in found if c.kind in ("test", "action", "urgency")]
    pool = [r for r in recs if r.criteria is not None and all(_contains(r.text, c) for c in named)]
    paths = [a for r in pool for a in _ages_with(r.criteria, wanted)] if pool else []  # type: ignore[arg-type]
    bound = int(claim.value)
    return any(all(not (d == "over" and int(v) >= bound) for d, v in path) for path in paths)


def check(
    found: list[Claim],
    retrieved: list[ServedRecommendation],
    every: list[ServedRecommendation],
    for_symptoms: list[ServedRecommendation] | None = None,
    wanted: set[str] | None = None,
) -> tuple[list[Claim], list[ServedRecommendation]]:
    """(claims no recommendation supports, the recommendations to quote instead).

    A threshold on a named test is checked against every recommendation naming that test (NG12's
    thresholds for it are there, wherever search ranked them); a referral route or urgency claimed
    for the symptoms the question names against the recommendations whose criteria name those
    symptoms (`for_symptoms`); other claims against the recommendations retrieved for the question."""
    contradicted: list[Claim] = []
    quoted: list[ServedRecommendation] = []
    never = any(c.kind == "universal" and c.value == "never" for c in found)
    for claim in found:
        if claim.kind in ("population", "universal") or (never and claim.kind == "age"):
            continue
        if claim.kind == "unnamed_test":  # NG12 must name the test somewhere
            named_in = re.compile(rf"(?<![\w-]){re.escape(claim.value)}(?![\w-])", re.IGNORECASE)
            if not any(named_in.search(r.text) for r in every):
                contradicted.append(claim)
            continue
        if claim.kind == "count":  # a count the topic's recommendations state otherwise, never as claimed
            topic = for_symptoms or retrieved
            counted = [r for r in topic if stated_counts(r)]
            if counted and not any(claim.value in stated_counts(r) for r in counted):
                contradicted.append(claim)
                quoted += [r for r in counted if r not in quoted]
            continue
        if claim.kind == "waived":  # nor that a result makes another test unnecessary
            if not any(_WAIVES_TEXT.search(r.text) for r in every):
                contradicted.append(claim)
                quoted += [r for r in _on_earlier_results(claim, every) if r not in quoted]
            continue
        if claim.kind == "excludes":  # NG12 never says a normal result excludes cancer
            if not any(_RULES_OUT.search(r.text) for r in every):
                contradicted.append(claim)
                quoted += [r for r in every if _FALSE_NEGATIVE.search(r.text) and r not in quoted]
            continue
        if claim.kind in ("action", "urgency") and for_symptoms:
            # NG12's words for the route, or its action (1.7.5's "routine referral" is non-urgent)
            if not any(
                _contains(r.text, claim) or r.action in ROUTE_ACTIONS.get(claim.value, ())
                for r in for_symptoms
            ):
                contradicted.append(claim)
                quoted += [r for r in for_symptoms if r not in quoted]
            continue
        pool = [r for r in every if _about(r, claim)] if claim.kind == "threshold" and claim.subject else []
        if claim.kind == "threshold" and pool:
            banded = [b for b in (_band_holds(r, claim) for r in pool) if b is not None]
            if banded:  # a value claimed for an age band: the table's band for those ages decides
                if not any(banded):
                    contradicted.append(claim)
                    quoted += [r for r in pool if _table_values(r) and r not in quoted]
                continue
            if not any(_contains(f"{r.text} {_table_values(r)}", claim) for r in pool):
                contradicted.append(claim)
                stated = [r for r in pool if _MEASURE.search(r.text) or _table_values(r)]
                quoted += [r for r in (stated or pool) if r not in quoted]
            continue
        # an age, interval, test or measure claimed for the symptoms the question names is checked
        # against the recommendations about those symptoms ("hoarseness for 2 weeks": not any
        # recommendation's "2 weeks"; "a CT for haemoptysis": not the CT of 1.2.5)
        pool = (
            for_symptoms
            if claim.kind in ("age", "interval", "test", "measure") and for_symptoms
            else retrieved
        )
        if claim.kind == "age" and claim.only and claim.subject == "over" and for_symptoms:
            if _lower_age_allowed(claim, found, for_symptoms, wanted or set()):
                contradicted.append(claim)
                quoted += [r for r in for_symptoms if r not in quoted]
                continue
        bound = _age_bound_to(claim, pool, wanted or set()) if claim.kind == "age" and for_symptoms else None
        if bound is False or (bound is None and not any(_contains(r.text, claim) for r in pool)):
            contradicted.append(claim)
            if pool is for_symptoms:
                quoted += [r for r in pool if r not in quoted]
    joint = [c for c in found if c.kind in _JOINT and not (never and c.kind == "age")]
    if not contradicted and for_symptoms and len([c for c in joint if c.kind != "population"]) >= 2:
        # each claim is NG12's somewhere; one recommendation on these symptoms must make them all
        if not any(all(_holds(r, c, wanted or set()) for c in joint) for r in for_symptoms):
            contradicted.append(_joint_claim(joint))
            quoted += [r for r in for_symptoms if r not in quoted]
    if contradicted and not quoted:
        subjects = {c.subject for c in contradicted if c.subject in TESTS}
        about = [r for r in retrieved if any(re.search(TESTS[s], r.text, re.I) for s in subjects)]
        quoted = about or retrieved
    return contradicted, quoted


def describe(contradicted: list[Claim]) -> str:
    parts = [
        c.text + " together"
        if c.kind == "joint"
        else f'"{c.text}" (it never mentions {c.text})'
        if c.kind == "unnamed_test"
        else f'"{c.text}"'
        for c in contradicted
    ]
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + f" or {parts[-1]}"


# --- a definition claimed for a term NG12 defines -------------------------------------------------
_DAYS = {"hour": 1 / 24, "day": 1.0, "working day": 1.0, "week": 7.0, "month": 30.0, "year": 365.0}
_DEFINED_SPAN = re.compile(
    r"\b(?:within|before|in|by|beyond|over|after)\s+(\d+|a few|one|two|three|four|six)\s+"
    r"(hours?|days?|weeks?|months?|years?)\b",
    re.IGNORECASE,
)
_DEFINED_AGES = re.compile(
    r"\b(?:from birth|aged (\d{1,3})|from (\d{1,3}))\s+(?:to|-|–)\s+(\d{1,3})\s+years?\b|"
    r"\baged (\d{1,3}) (?:and|or) over\b",
    re.IGNORECASE,
)
_CLAIMED_SPAN = re.compile(
    rf"(?<![\w.])(?P<count>{_COUNT})\s*(?:working\s+|business\s+)?(?P<span>hours?|hrs?|h|days?|weeks?|wks?|months?|mths?)\b",
    re.IGNORECASE,
)
_CLAIMED_RANGE = re.compile(
    r"(?<![\d.])(\d{1,3})\s*(?:-|–|to)\s*(\d{1,3})(?![\d.])(?!\s*(?:days?|weeks?|hours?))"
)


def _days(count: str, unit: str) -> float:
    number = float(_WORD_NUMBERS.get(count.lower(), count))
    return number * _DAYS.get(unit.lower().rstrip("s"), 1.0)


def definition_contradicted(term: str, claimed: str, definition: str) -> list[Claim]:
    """The details of a definition claimed for an NG12 term (a timeframe, an age range) that NG12's
    own definition of it (`definition`, the passage of "Terms used in this guideline") does not
    give: "suspected cancer pathway referral = seen within 2 weeks" against its "within 28 days";
    "children = under 18" against "from birth to 15 years". Empty when the definition gives the
    same, or the claim states no detail NG12's definition could be held to."""
    out: list[Claim] = []
    # what is claimed, without its tag: "seen within 2 weeks, that's the definition isn't it"
    claimed = re.split(
        r"[,;]?\s+(?:-\s+)?(?:that'?s|isn'?t it|right|correct|yes|yeah|is that|as per|according to|per)\b",
        claimed,
        maxsplit=1,
        flags=re.IGNORECASE,
    )[0].strip()
    spans = [(m.group(1), m.group(2)) for m in _DEFINED_SPAN.finditer(definition)]
    for m in _CLAIMED_SPAN.finditer(claimed):
        count, span = _WORD_NUMBERS.get(m.group("count").lower(), m.group("count")), m.group("span")
        unit = _UNITS.get(span.lower().rstrip("s"), span.lower().rstrip("s"))
        if unit == "year":
            continue
        days = _days(count, unit)
        same = any(
            (n.lower() == "a few" and unit == "hour")
            or (n.lower() != "a few" and abs(_days(n, u) - days) < 1e-6)
            for n, u in spans
        )
        if not same:
            out.append(Claim("interval", f"{term.lower()} means {claimed}", f"{count} {unit}", "deadline"))
    ranges = [
        (int(m.group(1) or m.group(2) or 0), int(m.group(3)) + 1) if m.group(3) else (int(m.group(4)), 200)
        for m in _DEFINED_AGES.finditer(definition)
    ]
    if ranges:
        lo, hi = ranges[0]
        claimed_ranges = [(int(m.group(1)), int(m.group(2)) + 1) for m in _CLAIMED_RANGE.finditer(claimed)]
        for m in _AGE_RULE.finditer(claimed):
            value = int(next(g for g in m.groups() if g))
            under = re.match(r"(under|below|younger)", m.group(0), re.IGNORECASE) is not None
            claimed_ranges.append((0, value) if under else (value, hi if value == lo else 200))
        # one age range claimed that is not NG12's (0-15 for children: "under 16" is the same)
        wrong = [(a, b) for a, b in claimed_ranges if (a, b) != (lo, hi)]
        if wrong:
            out.append(Claim("age", f"{term.lower()} means {claimed}", str(wrong[0][0]), "over"))
    return out


# --- kept for the earlier API (tests, LLM validation) ----------------------------------------------


def claimed_details(message: str) -> list[str]:
    """The values of the claims a message makes (numbers, urgency words)."""
    return [
        c.value.split(" ")[0] if c.kind == "interval" else c.value
        for c in claims(message)
        if c.kind not in ("test", "universal", "unnamed_test", "excludes", "waived", "count")
    ]


def unsupported(details: list[str], texts: list[str]) -> list[str]:
    """Claimed details that none of the texts contains."""
    joined = " ".join(t.lower() for t in texts)
    missing = []
    for d in details:
        stem = d.rstrip("ly") if d.endswith("ly") else d
        if not re.search(rf"(?<![\w.]){re.escape(stem)}", joined):
            missing.append(d)
    return missing
