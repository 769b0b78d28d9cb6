"""Questions about what NG12 means by a term: answered from its "Terms used in this guideline".

`asked_term` finds a definition question ("what does 'unexplained' mean?", "define very urgent",
"how does NG12 define persistent?", "what counts as urgent?", "what is a suspected cancer pathway
referral?") about one of the terms NG12 defines, and returns the term as the guideline heads its
definition; chat then quotes that passage, verbatim, with its page.
"""

from __future__ import annotations

import re

#: The terms NG12 defines (its "Terms used in this guideline"), and other ways of naming them.
TERMS: dict[str, tuple[str, ...]] = {
    "Children and young people": ("children and young people", "cyp"),
    "Children": ("children", "child"),
    "Young people": ("young people", "young person"),
    "Consistent with": ("consistent with",),
    "Direct access": ("direct access", "direct-access"),
    "Immediate": ("immediate", "immediately", "immediate referral"),
    "Non-urgent": ("non-urgent", "non urgent", "routine"),
    "Persistent": ("persistent",),
    "Raises the suspicion of": ("raises the suspicion of", "raises suspicion"),
    "Safety netting": ("safety netting", "safety-netting", "safety net"),
    "Suspected cancer pathway referral": (
        "suspected cancer pathway referral",
        "suspected cancer pathway",
        "2ww",
        "2 week wait",
        "two week wait",
        "2-week wait",
    ),
    "Unexplained": ("unexplained",),
    "Very urgent": ("very urgent", "very urgently"),
    "Urgent": ("urgent", "urgently"),
}
_ALIASES = sorted(
    ((alias, term) for term, aliases in TERMS.items() for alias in aliases), key=lambda x: -len(x[0])
)
_ALT = "|".join(re.escape(a) for a, _ in _ALIASES)
_QUESTION = re.compile(
    rf"\b(?:what (?:does|do) (?:ng12|nice|the guideline|it) mean by|what is meant by|what's meant by|"
    rf"what (?:does|do|is the meaning of|counts as|exactly is|is|are)|define|definition of|meaning of|"
    rf"how (?:does|do) (?:ng12|nice|the guideline) define|what timeframe is|what time ?frame is|"
    rf"how (?:quick|fast|soon|long) is|what age counts as|which ages? (?:counts? as|are)|what's)\s+"
    rf"(?:an?\s+|the\s+)?['\"‘“]?(?P<term>{_ALT})['\"’”]?"
    rf"(?:\s+(?:mean|means|refer to|stand for))?"
    rf"(?:\s+(?:in|according to|by|for|under)\s+"
    rf"(?:ng12|nice|the guideline|this guideline|nice ng12))?"
    # "... in the SCC recommendation", "... in 1.7.4", "... here"
    rf"(?:\s+(?:in|for)\s+(?:the |this |that )?[\w.' -]{{0,30}}?"
    rf"(?:recommendations?|recs?|section|\d\.\d+\.\d+)"
    rf"|\s+here)?\s*[?.!]*\s*$",
    re.IGNORECASE,
)
_TERM_OF = {alias: term for alias, term in _ALIASES}


#: Words that make a question about what a term means, wherever they stand ("how long does a
#: symptom have to last to count as 'persistent'?", "difference between urgent and very urgent?",
#: "what ages count as children and young people?", "what does 'direct access' mean for a test?").
_CUE = re.compile(
    r"\b(mean|means|meant|meaning|define[sd]?|definitions?|counts? as|counted as|class(?:ed|ified)? as|"
    r"qualif(?:y|ies) as|regarded as|considered|stand for|stands for|difference between|differ|"
    r"distinguish|versus|vs\.?|what ages?|which ages?|how old|age range|ages? (?:of|for|counts?))\b",
    re.IGNORECASE,
)
#: A question about how far a term reaches ("is there a set number of weeks for 'persistent'?",
#: "how long is 'persistent'?"): a definition question when the term is quoted, as a term asked about.
_EXTENT = re.compile(
    r"\b(how (long|many|much|soon|old)|set (number|period|time|duration|limit)|number of (hours|days|weeks|"
    r"months|years)|time ?(limit|period|frame|scale)|duration|cut-?off|threshold|fixed (period|time))\b",
    re.IGNORECASE,
)
_QUOTED = re.compile(r"['\"‘“]([^'\"‘’“”]{2,60})['\"’”]")


def asked_definitions(message: str) -> list[str]:
    """The NG12-defined terms a definition question asks about (several: "difference between
    urgent and very urgent?"), in the order named; empty when it asks about no term's meaning.
    Terms in quotes are the ones asked about when there are any."""
    text = message.strip()
    m = _QUESTION.search(text)
    if m:
        return [_TERM_OF[m.group("term").lower()]]
    quoted = [
        _TERM_OF[q.group(1).strip().lower()]
        for q in _QUOTED.finditer(text)
        if q.group(1).strip().lower() in _TERM_OF
    ]
    if quoted and _EXTENT.search(text):  # how far a quoted term reaches is what it means
        return list(dict.fromkeys(quoted))
    if not _CUE.search(text):
        return []
    if quoted:
        return list(dict.fromkeys(quoted))
    named = [_TERM_OF[n.group(1).lower()] for n in _NAMED.finditer(text)]
    return list(dict.fromkeys(named))


def asked_term(message: str) -> str | None:
    """The (first) NG12-defined term a definition question asks about, or None."""
    terms = asked_definitions(message)
    return terms[0] if terms else None


_TIMEFRAME = re.compile(
    r"\b(how (fast|soon|quickly|long|urgent(ly)?)|what time ?frame|within how|timescale|by when|"
    r"how many (hours|days|weeks))\b",
    re.IGNORECASE,
)
_NAMED = re.compile(rf"(?<![\w-])({_ALT})(?![\w-])", re.IGNORECASE)


#: A claim about what a term means: "NG12 defines/counts/classes X as ...", "X means ...".
_DEFINES = re.compile(
    r"\b(defines?|defined|definition|counts?|means|class(?:es)?|classifies|regarded as)\b", re.IGNORECASE
)


def claims_definition(text: str) -> bool:
    """The text says what a term means (a definition claimed as NG12's)."""
    return bool(_DEFINES.search(text))


#: A definition claimed for a term NG12 defines: "X = Y, that's the definition", "X means Y", "X is
#: defined as Y", "NG12 defines X as Y", "the definition of X is Y", "by definition X is Y".
_TERM = rf"['\"‘“]?(?<![\w-])(?P<term>{_ALT})(?![\w-])['\"’”]?"
_IN_NG12 = r"(?:\s+(?:in|according to|per|by|under)\s+(?:ng12|nice|the guidelines?|nice ng12))?"
_CLAIMED_DEFINITION = [
    re.compile(
        rf"{_TERM}\s*(?:=|->|means|meaning|is defined as|are defined as|defined as|stands for|"
        rf"refers to|is short for)\s*(?P<what>[^?!;]+)",
        re.IGNORECASE,
    ),
    re.compile(
        rf"\b(?:defines?|defined|class(?:es)?|classif(?:y|ies)|counts?|regards?|treats?)\s+(?:an?\s+|the\s+)?"
        rf"{_TERM}\s+as\s+(?P<what>[^?!;]+)",
        re.IGNORECASE,
    ),
    re.compile(
        rf"\b(?:definition|meaning) of\s+(?:an?\s+|the\s+)?{_TERM}{_IN_NG12}\s*(?:is|=|:)"
        r"\s*(?P<what>[^?!;]+)",
        re.IGNORECASE,
    ),
    # "X is/: Y" only beside a word saying it is a definition ("..., that's the NG12 definition")
    re.compile(
        rf"{_TERM}\s*(?:is|are|:)\s+(?P<what>[^?!;]+?)(?=[,.\s-]*\b(?:that'?s|which is|is that|as per)?\s*"
        rf"(?:the |ng12'?s |nice'?s |its |their )?(?:ng12 |nice )?definition\b)",
        re.IGNORECASE,
    ),
    re.compile(rf"\bby definition,?\s+{_TERM}\s*(?:is|are|=|means)\s+(?P<what>[^?!;]+)", re.IGNORECASE),
]


def claimed_definition(text: str) -> tuple[str, str] | None:
    """(the NG12 term, what the text says it means) when the text states a definition of a term
    NG12 defines ("suspected cancer pathway referral = seen within 2 weeks, that's the definition");
    None otherwise. A question about a term ("what does urgent mean?") states none."""
    for pattern in _CLAIMED_DEFINITION:
        m = pattern.search(text)
        if m is not None and not re.match(r"\s*(?:what|how|which|when)\b", m.group("what"), re.IGNORECASE):
            return _TERM_OF[m.group("term").lower()], m.group("what").strip()
    return None


def defined_terms(message: str) -> list[str]:
    """Every term NG12 defines that the message names, in the order named ("children", "young
    people": Children, Young people)."""
    return list(dict.fromkeys(_TERM_OF[m.group(1).lower()] for m in _NAMED.finditer(message)))


def asks_timeframe(message: str) -> bool:
    """The question asks how fast something must happen ("how fast does she need to be seen?")."""
    return bool(_TIMEFRAME.search(message))


def asked_terms(message: str) -> list[str]:
    """NG12-defined urgency terms the message names ("very urgent = how long?"), longest first."""
    wanted = {"Immediate", "Very urgent", "Urgent", "Non-urgent", "Suspected cancer pathway referral"}
    found = [_TERM_OF[m.group(1).lower()] for m in _NAMED.finditer(message)]
    return [t for t in dict.fromkeys(found) if t in wanted]
