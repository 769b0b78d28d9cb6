"""What a process question asks, and NG12's recommendations that answer it.

NG12's general sections (1.14 information and support, 1.15 safety netting, 1.16 the diagnostic
process) are short and alike: one embedding of a whole question ("she's the main carer for her
husband - anything on that? and how soon does the referral have to go off") matches several of
them about equally, and a question asking two things gets neither. So each thing a GP asks about
the process is a topic, read from the question by what it asks (what to tell the person, support
while waiting, safety netting, uncertainty whether to refer, how soon the referral goes, ...), and
answered by the recommendations NG12 words that way (matched on the recommendation's own text,
never by its number). Every topic the question asks contributes its recommendations, in the
order the question asks them; they lead the answer (chat.graph).

Whether the person is being referred matters for what to tell them: someone referred is told
they are being referred to a cancer service (1.14.3, 1.14.5); someone who does not meet the
criteria for referral is in the safety netting group, reassured that their risk is low and told
what to look out for (1.14.8, 1.14.9).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ng12_common.served_recommendations import ServedRecommendation

#: Asking what to say to the person (or their family).
_TELL = (
    r"\b(tell(ing)? (him|her|them|the (patient|person|pt|family|parents|mum|dad|child))|told (him|her|them)|"
    r"what (should|do|can|would) i (be )?(say|tell)\w*|what to (say|tell)|say to (him|her|them|the)|"
    r"explain(ing)? (to|it|this|that|the referral|what)|what (info|information)|"
    r"information (to give|should|do i|for (him|her|them|the))|break(ing)? (it|the news)|word(ing)? it|"
    r"counsel\w*|prepare (him|her|them)|what to expect|mention(ing)? (it|cancer|the (word|possibility)))"
)
#: The person does not meet the criteria for referral (NG12's safety netting group, 1.15.2).
_NOT_REFERRED = (
    r"\b((doesn'?t|does not|don'?t|do not|didn'?t|not|never|without|no) (quite |really )?"
    r"(meet\w*|fulfil\w*|qualify\w*)|(criteria|threshold) (are |is )?not met|"
    r"below the (referral )?threshold|no (red flags?|criteria)|not (referring|being referred|for referral|"
    r"going to refer)|(won'?t|will not|not going to) refer|safety[- ]?net\w*)"
)
_REFERRED = (
    r"\b(2 ?ww|two[- ]week[- ]wait|suspected cancer pathway|fast[- ]track|urgent referral|"
    r"referr(ing|ed)|(am|i'?m|about to|going to|will|i'?ll|to) refer|sending|sent|send)\b"
)
_WORRIED = r"\b(anxious|anxiety|worried|worry(ing)?|scared|terrified|frightened|distressed|upset|concerned)\b"


@dataclass(frozen=True)
class ProcessTopic:
    name: str
    #: the question asks this (every pattern matches; the first one's place orders the topics)
    asks: tuple[str, ...]
    #: NG12's wording of the recommendations that answer it
    answers: str
    #: ... unless the question also says this
    unless: str | None = None


TOPICS: tuple[ProcessTopic, ...] = (
    ProcessTopic(
        "what to tell someone not referred",
        (_TELL, _NOT_REFERRED),
        r"in the safety netting group|being offered safety netting",
    ),
    ProcessTopic(
        "reassuring someone worried who is not referred",
        (_WORRIED, _NOT_REFERRED),
        r"in the safety netting group",
    ),
    ProcessTopic(
        "what to tell someone being referred",
        (_TELL,),
        r"explain to people who are being referred|the information given to people with suspected cancer",
        unless=_NOT_REFERRED,
    ),
    ProcessTopic(
        "safety netting",
        (
            rf"({_NOT_REFERRED}|\bfollow(ed|ing)?[- ]?(them |him |her |it )?up\b|\breview (them|him|her)\b|"
            r"\bcome back\b|\bre-?evaluat\w*|\bwhen (to|should (she|he|they)) return\b)",
        ),
        r"consider a review for people|which symptoms to look out for",
        unless=r"\bmiss(es|ed)?\b|\bdna\w*|did not attend|non-?attend",
    ),
    ProcessTopic(
        "uncertainty whether to refer",
        (
            r"\b((don'?t|do not|didn'?t) (really |genuinely )?know (if|whether)|not sure|unsure|uncertain\w*|"
            r"borderline|not textbook|not classical|atypical|odd presentation|on the fence|"
            r"(discuss|talk|speak)\w* (it |this )?(with|to) (a |the )?"
            r"(specialist|consultant|registrar|reg)\b|"
            r"specialist advice|advice and guidance|a ?(\+|&) ?g\b|"
            r"(ring|phone|call|email)\w* (a |the )?(specialist|consultant|registrar|hospital|team))",
            r"\b(refer\w*|2 ?ww|warrant\w*|worth|serious|specialist|consultant|registrar|advice|"
            r"a ?(\+|&) ?g)\b",
        ),
        r"discussion with a specialist",
    ),
    ProcessTopic(
        "getting the person seen sooner",
        (r"\b(seen (faster|sooner|quicker|more (quickly|urgently))|expedit\w*|upgrad\w*|uneasy)\b",),
        r"seen more urgently|a sense of urgency",
    ),
    ProcessTopic(
        "how soon the referral is sent",
        (
            r"\b(referral\b.{0,40}\b(be sent|sent off|go(es)? (off|out)|be submitted|be made|be done)|"
            r"(send|submit)(ting)? (the|a|my) referral|decision to refer)",
        ),
        r"the referral is made within",
    ),
    ProcessTopic(
        "support while waiting",
        (
            r"\b(while (they |she |he )?(are |is )?wait\w*|the wait\b|"
            r"waiting for (the|their|her|his) (appointment|appt|referral|clinic|specialist)|"
            r"before (the|their|her|his) (appointment|appt))",
        ),
        r"continuing support while waiting",
    ),
    ProcessTopic(
        "additional support needs",
        (
            r"\b(additional (support )?needs|personal circumstances|(main |sole |full[- ]time )?carer for|"
            r"cares for|caring for|looks after|deaf|blind|learning disabilit\w*|disabled|"
            r"interpreter|lives alone|housebound|dementia)\b",
        ),
        r"additional support needs because of their personal circumstances",
    ),
    ProcessTopic(
        "results and who acts on them",
        (
            r"\b(responsib\w*|chas(e|es|ing)|acts? on the results?|who (reviews|checks)|false[- ]negative\w*|"
            r"(cxr|x-?ray|scan|fit|test|result|investigation)s?\b.{0,30}\b(reported|came back|was|were|is) "
            r"(as )?(normal|negative|clear|nad)|"
            r"(normal|negative|clear) (cxr|x-?ray|chest x-?ray|fit|result))\b",
        ),
        r"results of investigations are reviewed",
    ),
    ProcessTopic(
        "missed appointments",
        (
            r"\b(miss(es|ed)? (their|his|her|the|an?) (appointment|appt)s?|did not attend|dna\w*|"
            r"non-?attend\w*)\b",
        ),
        r"miss their appointments",
    ),
    ProcessTopic(
        "a test sample not returned",
        (
            r"\b((never|not|didn'?t|hasn'?t|doesn'?t|won'?t) (\w+ ){0,2}(sen[dt]s?|return\w*|br[io]ng\w*|"
            r"hand\w*|post\w*|do(ne)?)\b(\s\w+){0,3}\s(back|in)\b|not (been )?returned|never returned)",
        ),
        r"return their sample|not returned a faecal sample",
    ),
)


def asked_topics(text: str) -> list[ProcessTopic]:
    """The process topics the question asks about, in the order it asks them."""
    found: list[tuple[int, int, ProcessTopic]] = []
    for i, topic in enumerate(TOPICS):
        matches = [re.search(p, text, re.IGNORECASE) for p in topic.asks]
        if not all(matches) or (topic.unless and re.search(topic.unless, text, re.IGNORECASE)):
            continue
        first = matches[0]
        assert first is not None
        found.append((first.start(), i, topic))
    return [topic for _, _, topic in sorted(found, key=lambda f: (f[0], f[1]))]


def answering(text: str, recs: dict[str, ServedRecommendation], limit: int) -> list[str]:
    """The ids of the recommendations that answer the process topics the question asks, topic by
    topic in the order asked (each topic's in guideline order), at most `limit`: every topic's
    first recommendation before any topic's second."""
    per_topic = []
    for topic in asked_topics(text):
        pattern = re.compile(topic.answers, re.IGNORECASE)
        found = sorted((rec for rec in recs.values() if pattern.search(rec.text)), key=lambda r: r.sort_key)
        per_topic.append([rec.id for rec in found])
    out: list[str] = []
    depth = max((len(ids) for ids in per_topic), default=0)
    for level in range(depth):
        for ids in per_topic:
            if level < len(ids) and ids[level] not in out:
                out.append(ids[level])
    return out[:limit]
