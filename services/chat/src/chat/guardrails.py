"""Rule-based guardrails (no LLM): what kind of message this is, before and after retrieval.

`classify_input` sorts a message into smalltalk, meta ("who are you"), emergency (someone
describing a current emergency or self-harm), medical_out_of_scope (treatment, dosing,
prognosis, other guidelines) or proceed. A message that also asks about referral criteria,
symptoms or investigations overrides the out-of-scope rule, so "treatment-resistant
dyspepsia: when to refer?" still proceeds. `post_retrieval_out_of_scope` applies the same
topic check to the (possibly rewritten) query once retrieval has run.

`rule_scope` is the rule layer over chat.scope's classifier, for the kinds a pattern names
without doubt (write/draft/fill in a document; phone numbers, waiting times, booking; doses,
prognosis; named other guidelines and screening programmes). `mixed_request` splits a message
into clauses ("is haemoptysis a 2WW and write me the letter") and, when some clauses are such a
request and the others are not, returns the in-scope remainder and the clauses to decline by name.
"""

from __future__ import annotations

import re
from typing import Literal

InputKind = Literal["smalltalk", "meta", "emergency", "medical_out_of_scope", "proceed"]
OutOfScopeKind = Literal["task_request", "logistics", "treatment", "other_guideline", "non_medical"]

_SMALLTALK = re.compile(
    r"^\s*(hi|hello|hey|hiya|good (morning|afternoon|evening)|thanks?|thank you|thx|cheers|ok(ay)?|"
    r"great|cool|bye|goodbye|how are you|nice one|perfect)\b[\s!.,?a-z]*$",
    re.IGNORECASE,
)
_SMALLTALK_MAX_WORDS = 6
_META = re.compile(
    r"\b(who are you|what are you|what can you do|what do you do|are you (a|an) (bot|ai|human|robot)|"
    r"how do you work|what is this (tool|service|app)|help me use|your (sources?|limitations))\b",
    re.IGNORECASE,
)
_EMERGENCY = re.compile(
    r"\b(kill (my|him|her)self|killing myself|suicid\w*|self[- ]harm\w*|end (my|it all)|want to die|"
    r"overdos\w*|(can'?t|cannot|not) breath\w*|chest pain (now|right now)|collapsed|unconscious|"
    r"not breathing|bleeding heavily|severe bleeding|having a (heart attack|stroke|seizure)|"
    r"choking|anaphyla\w*)\b",
    re.IGNORECASE,
)
# A current emergency is described in the present/first person, not asked about as a criterion.
_EMERGENCY_CONTEXT = re.compile(
    r"\b(i|i'm|im|i am|my|me|we|he is|she is|he's|she's|right now|now)\b", re.IGNORECASE
)
_OTHER_GUIDELINE = re.compile(r"\b(nccn|esmo|asco|sign guidelines?|ng(?!12\b)\d{1,3})\b", re.IGNORECASE)
# Words that show the question is (also) about recognition and referral, which NG12 covers.
NG12_WORDS = (
    r"refer\w*|criteri\w*|symptoms?|signs?|present\w*|investigat\w*|test(s|ing)?|suspect\w*|"
    r"recogni\w*|red flags?|x-?ray|ultrasound|endoscop\w*|fit\b|psa|ca125|pathway"
)
_IN_SCOPE_OVERRIDE = re.compile(rf"\b({NG12_WORDS}|when (should|do|to))\b", re.IGNORECASE)
_SELF_HARM = re.compile(
    r"\b(kill (my|him|her)self|killing myself|suicid\w*|self[- ]harm\w*|end it all|want to die)\b", re.I
)


def is_self_harm(message: str) -> bool:
    return bool(_SELF_HARM.search(message))


def _words(message: str) -> int:
    return len(re.findall(r"[A-Za-z0-9']+", message))


def asks_other_guideline(message: str) -> bool:
    return bool(_OTHER_GUIDELINE.search(message))


def classify_input(message: str) -> InputKind:
    """The rule-based route for a raw user message (chat.scope's classifier decides the rest)."""
    text = message.strip()
    if _EMERGENCY.search(text) and (is_self_harm(text) or _EMERGENCY_CONTEXT.search(text)):
        if not _IN_SCOPE_OVERRIDE.search(text) or is_self_harm(text):
            return "emergency"
    if _words(text) <= _SMALLTALK_MAX_WORDS and _SMALLTALK.match(text):
        return "smalltalk"
    if _META.search(text):
        return "meta"
    if rule_scope(text) is not None:
        return "medical_out_of_scope"
    return "proceed"


def out_of_scope(text: str) -> bool:
    """A request the scope rules name (a document to write, logistics, dosing or prognosis,
    another guideline or a screening programme)."""
    return rule_scope(text) is not None


def post_retrieval_out_of_scope(message: str, query_text: str) -> bool:
    """The same rules on the message and on the query actually searched (a rewrite)."""
    return out_of_scope(message) or (query_text != message and out_of_scope(query_text))


# --- scope rules over the classifier, and mixed requests -------------------------------------------

_TASK = re.compile(
    r"\b(write|writ(ing|ten)|draft\w*|fill(ing)? (in|out)|compose|prepare|type up|put together|"
    r"pre-?populate|populate|generate|create|produce|do me|make (me|us)|dictate|help me (write|draft))\b"
    r".{0,60}\b(letters?|notes?|fit ?notes?|sick ?notes?|med ?3|certificates?|forms?|proformas?|"
    r"referrals?|prescriptions?|scripts?|leaflets?|e-?mails?|sms|texts?|reports?|summar(y|ies)|"
    r"discharge|documents?|templates?|responses?|repl(y|ies)|messages?)\b",
    re.IGNORECASE,
)
_LOGISTICS = re.compile(
    r"\b(phone|telephone|tel\.? (no|number)s?\b|contact (details|numbers?)|fax|e-?mail address|"
    r"opening (hours|times)|"
    # an address as a noun ("the address of the clinic"), not the verb ("address her worries")
    r"(postal|home|clinic'?s?|hospital'?s?|their|its|the) address(es)?\b"
    r"(?! (her|his|their|the|any|my|your|this|these|those|concerns?|worr))|"
    r"address(es)? (of|for) (the|a|an|this|that|our|my|local)\b|"
    r"number for|"
    r"waiting (time|list)s?|how long is the (current )?wait|wait(ing)? times?|current wait(ing)?|"
    r"local (radiology|hospital|trust|service|department|dept|clinic)s?|"
    r"how long (will|does|do) (it|they|the) "
    r"(take|wait)|book(ing)?|appointment (slot|time)s?|which (hospital|trust|clinic|centre|unit)|"
    r"nearest (hospital|clinic)|parking|transport|interpreter service|e-?rs|choose and book|"
    r"rejected referral|bounced|"
    # who and how to contact, and where a form is: local administration
    r"direct (line|number|dial)|switchboard|bleep|extension (number|no)|secretar(y|ies)|"
    r"(where|how) (do|can|would|should) (i|we) (find|get|download|access) "
    r"(the |a |our )?[\w\s-]{0,40}forms?)\b",
    re.IGNORECASE,
)
_DOSING = re.compile(
    r"\b(dos(e|es|age|ing)|\d+ ?mg|mg\b|how much (\w+ )?(should|to) (i )?(give|prescribe)|"
    r"prescrib\w*|side effects?|prognos\w*|life expectancy|survival|surviv\w+ rate|chemo\w*|"
    r"radiotherap\w*|immunotherap\w*|how long (will|does|do) (he|she|they|i) (have|live)|mortality|"
    r"how long (has|have|does|do) (he|she|they|i) (\w+ )?(got|left)|"
    # "surgery" as an operation, not the GP surgery ("came into the surgery", "at our surgery")
    r"(?<!the )(?<!our )(?<!my )(?<!gp )(?<!practice )(?<!this )(?<!at )(?<!into )(?<!to )surgery|"
    r"surgical|resection|stag(e|ing) (of|for)|palliat\w*|surveillance after|recurrence after|"
    # treatment choices and prognosis in other words (NICE's cancer treatment guidelines, not NG12)
    r"active surveillance|watchful waiting|prostatectomy|mastectomy|lumpectomy|radical (surgery|treatment)|"
    r"hormone therap\w*|induction (chemo\w*|therapy|regimen|treatment)|regimens?|"
    # a person's chances are prognosis; "what are the chances it's cancer" asks about risk (NG12's own basis)
    r"(what are|what'?s|whats) (his|her|their|my patient'?s|the patient'?s) (chances|odds|outlook)|"
    r"chances? of (survival|surviving|cure|recovery|beating)|cure rate|curable|"
    # how a cancer is treated or managed (not "treatment-resistant dyspepsia")
    r"how (is|are|would|should|do|does|can) ([a-z'-]+ ){1,3}(be |get )?(treated|managed)|"
    # tx / rx: the usual abbreviations of treatment (Oxford Handbook of General Practice)
    r"(treat(ment)?|tx|rx) options?|first[- ]line (treatment|therapy|tx|rx|regimen|management)|"
    r"how (do|should|would|can) (i|you|we) (treat|manage) (it|this|that|them|her|him|[a-z]+ cancer))\b",
    re.IGNORECASE,
)
_NAMED_GUIDANCE = re.compile(
    r"\b(uspstf|nccn|esmo|asco|sign \d+|sign guidelines?|bts guidelines?|cks|rome iv|"
    r"american (cancer society|college)|(ng|cg|dg|qs)\d{1,3}\b(?<!ng12)|"
    r"nice'?s? (?!ng12\b|suspected cancer\b|cancer\b)([a-z-]+ ){1,5}guidelines?\b)",
    re.IGNORECASE,
)
_PROGRAMMES = re.compile(
    r"\b(screening programmes?|screening (age|interval)s?|bowel (cancer )?screening|breast screening|"
    r"cervical screening|lung (cancer )?screening|smear tests?|mammogram (interval|programme)|vaccin\w*|"
    # when a routine cervical screening test is due: the programme's recall, not NG12
    r"next smear|smear (is |was )?(due|overdue)|due (a|her|for a|for her) smear|smear recall|"
    r"(targeted )?lung health checks?|nhs health checks?|aaa screening)\b",
    re.IGNORECASE,
)
#: A person described as well (no symptoms at all) near a request to screen them.
_WELL = (
    r"(asymptomatic|no ([a-z]+ ){0,2}symptoms|symptom-?free|without (any )?symptoms|healthy|"
    r"well (man|woman|person))"
)
_SCREENING_WELL = re.compile(
    rf"\b{_WELL}\b.{{0,160}}\bscreen(ing|ed)?\b|\bscreen(ing|ed)?\b.{{0,160}}\b{_WELL}\b",
    re.IGNORECASE,
)
#: What makes a message naming a screening programme NG12's business after all: a result or finding
#: to act on, symptoms, or a referral ("bowel screening FIT came back positive, refer?"). The
#: programme's own words ("smear test", "screening criteria") are not: they are the programme's.
_PROGRAMME_OVERRIDE = re.compile(
    r"\b(refer\w*|symptoms?|symptomatic|signs?|present(s|ed|ing)|suspect\w*|results?|positive|abnormal|"
    # a negative or normal screening result is a result too: NG12 says what it changes (1.3.1: "FIT
    # should be offered even if the person has previously had a negative FIT result through the NHS
    # bowel cancer screening programme")
    r"neg|negative|normal|"
    r"raised|came back|found on|red flags?)\b",
    re.IGNORECASE,
)
_RESULT_NAMED = re.compile(
    r"\b(raised|high|elevated|low|abnormal|positive|found on|came back|results?|refer\w*)\b", re.IGNORECASE
)
_CLAUSE_SPLIT = re.compile(
    # a "?" written against a word is GP shorthand for "suspected" ("w ?panc ca pain", "?leukaemia":
    # retrieval.search.SHORTHAND's "?lung ca"), not the end of a question
    r"(?:;+\s*|\?+(?![A-Za-z])\s*|,\s*(?:and|also|but|then|plus)\b\s*|\s+(?:\+|&|/)\s+|"
    # a new question after a comma: "draft the letter, which recommendation applies?"
    r",\s*(?=(?:which|what|when|how|who|where|does|do|is|are|can|could|should|would|will|please)\b)|\s+(?:and|also|plus|then|but)\s+(?=(?:can|could|"
    r"would|will|please|also|what|which|how|who|where|when|write|draft|fill|give|tell|book|send|"
    r"do|does|is|are|i need|i'd like|help)\b)|"
    # a sentence end, not an abbreviation's full stop ("the tel no. for the clinic", "e.g. a CT")
    r"(?<!\b\w)(?<!\bno)(?<!\btel)(?<!\bapprox)(?<!\bvs)(?<!\bdr)(?<!\be\.g)(?<!\bi\.e)(?<!\betc)\.\s+)",
    re.IGNORECASE,
)
#: The request itself at the start of a task clause ("draft a referral letter", "can you fill in
#: the 2ww form"), before what it says about the patient ("for my 70 year old with ...").
_TASK_LEAD = re.compile(
    r"^.*?\b(letters?|notes?|forms?|proformas?|referrals?|prescriptions?|scripts?|e-?mails?|reports?|"
    r"summar(y|ies)|documents?|templates?)\b",
    re.IGNORECASE,
)
_FILLER = re.compile(r"^(please|thanks?|thank you|cheers|ok|also|and|too)?[\s!.?,]*$", re.IGNORECASE)


#: A clause that asks NG12 something: a question word or an information request at its start, or
#: after joining words or a dash ("back to the weight loss one - how soon ..."). An instruction
#: about a document being asked for ("make it sound urgent", "keep it short", "tell him when to
#: come back", "ready to print") is part of that request, and so is what it should explain ("how
#: to do it": an embedded question, unless a "?" closes it).
_QUESTION_OPEN = re.compile(
    r"(?:^|[-:\u2013]\s*|\b(?:and|also|but|plus|then|so)\s+)(?:please\s+|pls\s+)?"
    r"(?:(?:what|which|how|when|who|where)(?! to\b)|what'?s|whats|why|can|could|would|will|is|are|"
    r"does|do|did|should|shall|has|have|tell (?:me|us)|give (?:me|us)|show (?:me|us)|explain|quote)\b",
    re.IGNORECASE,
)
#: A clause that only says under which other guideline the question is asked ("Per NICE's child
#: maltreatment guideline, what ...?"): it governs the whole message.
_QUALIFIER = re.compile(r"^(?:per|as per|according to|under|in|from|based on|using|following|by)\b", re.I)
#: A short question naming none of NG12's business ("what age range?") leans on the clause before
#: it; it is a question of its own only beside another clause it can lean on (a patient described).
SHORT_QUESTION = 4


def asks_question(message: str, part: str) -> bool:
    """The clause asks something: a "?" closes it in the message, or it opens as a question."""
    at = message.find(part)
    closed = at >= 0 and message[at + len(part) :].lstrip(" ,.;:-'\"")[:1] == "?"
    return closed or _QUESTION_OPEN.search(part) is not None


#: What a terse request names when it asks NG12 something without a question ("refer criteria for
#: melanoma", "need the 2ww criteria for lung ca"): a referral, a pathway, criteria for something. A
#: statement about the patient or a finding ("I want to send a 70 yo with vague symptoms", "CXR today
#: looks like mesothelioma") is context, and criteria alone are not NG12's ("age and smoking criteria
#: pls" after a screening programme are the programme's).
_TERSE_NG12 = re.compile(r"\b(refer(ral)?s?|2\s?ww|pathway|criteria (for|of|in))\b", re.IGNORECASE)


def _names_ng12_business(part: str) -> bool:
    return bool(_TERSE_NG12.search(part))


def leaves_question(message: str, kept: list[str]) -> bool:
    """Whether the clauses kept (not declined) ask NG12 something of their own: a question, or a
    terse request naming NG12's business ("refer criteria for melanoma", "need the 2ww criteria").
    Statements about the patient, and instructions about a document requested, do not: "draft the
    letter for my 67yo with PMB, make it sound urgent" is a request for a document, whatever
    clinical content it carries."""
    questions = [k for k in kept if asks_question(message, k)]
    leaned_on = len(kept) > len(questions)
    return any(
        _words(q) >= SHORT_QUESTION or _IN_SCOPE_OVERRIDE.search(q) or _names_ng12_business(q) or leaned_on
        for q in questions
    ) or any(_names_ng12_business(k) for k in kept)


def governs(part: str, kind: str) -> bool:
    """A declined clause that qualifies the whole question ("Per NICE's X guideline, ...")."""
    return kind == "other_guideline" and _QUALIFIER.search(part) is not None


def rule_scope(text: str) -> OutOfScopeKind | None:
    """The out-of-scope kind a pattern names without doubt, or None."""
    if _TASK.search(text):
        return "task_request"
    if asks_other_guideline(text) or _NAMED_GUIDANCE.search(text):
        return "other_guideline"
    if _PROGRAMMES.search(text) and not _PROGRAMME_OVERRIDE.search(_PROGRAMMES.sub(" ", text)):
        return "other_guideline"
    # NG12 is about people with symptoms, not screening the well (a raised result found on
    # screening bloods is a finding NG12 does cover)
    well = _SCREENING_WELL.search(text)
    if well and not _RESULT_NAMED.search(text):
        return "other_guideline"
    if _LOGISTICS.search(text):
        return "logistics"
    if _DOSING.search(text) and not _IN_SCOPE_OVERRIDE.search(text):
        return "treatment"
    return None


def described_patient(message: str) -> str:
    """What a declined document request says about the patient, without the request ("draft the
    2ww letter for my 67yo with PMB? make it sound urgent" -> "for my 67yo with PMB"): the text
    to search for the nearest thing NG12 says. The message itself when it is not such a request."""
    about = [
        part[m.end() :].strip(" ,.;:-") if (m := _TASK.search(part)) else part for part in clauses(message)
    ]
    about = [a for a in about if rule_scope(a) is None and _words(a) >= 2]
    text = " ".join(about)
    return text if _words(text) >= 3 else message


def clauses(message: str) -> list[str]:
    parts = [p.strip(" ,.;:-") for p in _CLAUSE_SPLIT.split(message)]
    return [p for p in parts if p and not _FILLER.match(p)]


def mixed_request(message: str) -> tuple[str, list[tuple[str, OutOfScopeKind]]] | None:
    """(in-scope remainder, [(clause, kind) to decline]) when the message mixes a question NG12
    can answer with a request it cannot; None otherwise."""
    parts = clauses(message)
    if len(parts) < 2:
        return None
    kinds = [(part, rule_scope(part)) for part in parts]
    declined = [(part, kind) for part, kind in kinds if kind is not None]
    rest = [part for part, kind in kinds if kind is None]
    kept = [part for part in rest if _words(part) >= 2]
    if not declined or not kept or not leaves_question(message, rest):
        return None  # the message's act is the declined request (its patient is offered NG12's nearest)
    if any(governs(part, kind) for part, kind in declined):
        return None
    # the patient a declined request describes is the question's too: "draft a letter for my
    # 70-year-old with anaemia, which recommendation applies?" asks about that patient
    about = [
        _TASK_LEAD.sub("", part, count=1).strip(" ,.;:-") for part, kind in declined if kind == "task_request"
    ]
    about = [a for a in about if _words(a) >= 3 and rule_scope(a) is None]
    return " ".join([*(f"{k.rstrip('?')}?" for k in kept), *about]), declined
