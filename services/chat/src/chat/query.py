"""Query building: follow-up detection and the three tiers.

A direct: a standalone question is searched as typed.
Follow-ups: <= 3 words; a starter ("what about", "and if", "and with", ...); a request to quote
  the part about X; or < 8 words with a context pronoun (it, that, they, ...).
C topic: a follow-up in a session with a topic is searched as "{topic} {message}".
B rewrite: a follow-up without a topic is rewritten, by the LLM when one is configured, else
  from the session's structured clinical state ("aged 50 weight loss oesophageal ...").
"""

from __future__ import annotations

import re

from chat.clinical import ClinicalState
from chat.process_topics import asked_topics
from ng12_common.models import ChatQuery

_STARTERS = (
    "what about",
    "how about",
    "and if",
    "what if",
    "and for",
    "and what",
    "and in",
    "what for",
    "and with",
)
#: "Quote the part about X" asks for words of the guideline under discussion.
_QUOTE_REQUEST = re.compile(
    r"\bquote\b.*?\b(?:about|on|regarding|mentioning|that says|with)\s+(.+?)[?.!]*$", re.I
)
#: A short message that continues the conversation: "and the cut off?", "also, who chases it?".
_CONTINUATIONS = ("and ", "also ", "but ", "so ", "then ", "plus ")
_SAME = re.compile(r"\b(the same|instead|as well|too)\b")
_PRONOUNS = re.compile(r"\b(it|that|they|this|them|those|these|their|theirs)\b", re.I)
_WORDS = re.compile(r"[A-Za-z0-9']+")


def quote_term(message: str) -> str | None:
    """X in "quote the part about X", else None."""
    m = _QUOTE_REQUEST.search(message.strip())
    return m.group(1).strip().strip("'\"") if m else None


def is_follow_up(message: str) -> bool:
    words = _WORDS.findall(message)
    lowered = " ".join(w.lower() for w in words)
    if len(words) <= 3:
        return True
    if lowered.startswith(_STARTERS) or quote_term(message):
        return True
    if len(words) < 10 and (lowered.startswith(_CONTINUATIONS) or _SAME.search(lowered)):
        return True  # "and the cut off for referral?", "what if he was 55 with the same PSA?"
    return len(words) < 8 and bool(_PRONOUNS.search(message))


def build(
    message: str, has_history: bool, topic: str | None, state: ClinicalState, follows: bool = False
) -> ChatQuery:
    """The query for a message; `follows`: the caller knows it continues the conversation (a claim
    about NG12 naming no patient, finding or test of its own)."""
    text = " ".join(message.split())
    if not has_history or not (follows or is_follow_up(text)):
        return ChatQuery(strategy="direct", text=text)
    if topic:
        return ChatQuery(strategy="topic", text=f"{topic} {text}")
    return ChatQuery(strategy="rewrite", text=rewrite_from_state(text, state))


def rewrite_from_state(message: str, state: ClinicalState) -> str:
    """A standalone query from the clinical state and the follow-up's own words."""
    context = state.describe()
    return f"{context} {message}".strip() if context else message


# --- questions about the process rather than a symptom ---------------------------------------------
#: NG12's sections on the referral process, not on a cancer site: patient information and support
#: (1.14), safety netting (1.15), the diagnostic process (1.16).
PROCESS_SECTIONS = ("1.14", "1.15", "1.16")
_PROCESS = re.compile(
    r"\b(inform\w*|info|tell (him|her|them|the (patient|person|pt))|explain\w*|reassur\w*|leaflets?|"
    r"written information|what (should|do|can) i (say|tell)|frame|break(ing)? the news|"
    r"support\w*|anxious|anxiety|worried|worry(ing)?|scared|terrified|frightened|distressed|upset|"
    r"while (they )?wait\w*|the wait\b|waiting for|"
    r"miss(es|ed)? (their|his|her|the|an?) (appointment|appt)s?|did not attend|dna\w*|non-?attend\w*|"
    r"follow(ed)?[- ]up|safety[- ]net\w*|come back|re-?evaluat\w*|review (them|him|her)|"
    r"discuss\w* with (a |the )?specialist|specialist advice|advice and guidance|a ?(\+|&) ?g|"
    r"uncertainty|not sure (whether|if)|unsure (whether|if)|atypical|non-?specific symptoms|"
    # the safety netting group: a symptom, but the referral criteria not met
    r"(doesn'?t|does not|don'?t|do not|not|never|without) (quite )?(meet|meeting|fulfil\w*|qualify\w*)|"
    r"(criteria|threshold) (are |is )?not met|below the (referral )?threshold|"
    r"responsib\w*|chas(e|es|ing)|acts? on the results?|who (reviews|checks)|"
    r"referral (letter|correspondence)|include in the referral|working day|"
    # how soon a referral is sent, and getting a person seen sooner (1.16.3, 1.16.8)
    r"referral\b.{0,40}\b(be sent|sent off|go(es)? off|be submitted|be made|be done)|"
    r"(send|submit)(ting)? (the|a|my) referral|"
    r"seen (faster|sooner|quicker|more (quickly|urgently))|expedit\w*|"
    r"additional (support )?needs|personal circumstances|deaf|blind|learning disabilit\w*|"
    r"interpreter|lives alone|housebound|dementia|carers?)\b",
    re.IGNORECASE,
)


def asks_about_process(message: str) -> bool:
    """The question is about the referral process (what to tell the person, support while they
    wait, missed appointments, uncertainty whether to refer, safety netting), which NG12's
    non-site-specific sections answer, whatever symptom or site it also names."""
    return bool(_PROCESS.search(message)) or bool(asked_topics(message))
