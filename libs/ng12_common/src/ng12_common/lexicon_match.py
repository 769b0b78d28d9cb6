"""Map free-text GP phrases to NG12 lexicon concepts (tiers 1 and 2), with their ConText status.

``match_concepts("unexplained hemoptysis", lexicon)`` finds the concepts a phrase names (longest
term first, never overlapping), with the modifiers it states (unexplained, persistent, recurrent,
visible, increasing in size, ...), numeric qualifiers (size in mm, duration in days), ConText
status (absent, someone else's, resolved, hypothetical: ``ng12_common.reading.context``),
explanation ("fatigue due to anaemia") and the tier that matched (the guideline's words exactly or
by word stems, or a curated lay term).

Modifiers and qualifiers belong to the concepts of their own segment of the phrase (segments are
split at commas, semicolons and "and"/"but"); a segment that names no concept ("..., largest
diameter 8 mm") qualifies the concept before it.

``read_phrase`` also returns the clauses that named no concept; ``ng12_common.reading.record``
reads a whole patient record with it (and tests, explanations and the semantic tier).

The lexicon data comes from the knowledge base (``KnowledgeBase.lexicon``): this module holds no
vocabulary of its own, only grammar cues (negation, modifiers, units).
"""

from __future__ import annotations

import itertools
import re
import unicodedata
from collections.abc import Iterable, Iterator, Mapping, Sequence
from functools import lru_cache
from importlib import resources
from typing import Literal

import yaml
from pydantic import BaseModel, Field

from ng12_common.criteria import PatientFacts, SymptomFact
from ng12_common.knowledge import LexiconEntry
from ng12_common.reading.clauses import PRONOUNS, clinical_words, stems
from ng12_common.reading.compose import ARTICLES_AND_SIDES, NO_FINDING, compose, generic_concepts
from ng12_common.reading.context import ContextStatus, default_rules
from ng12_common.reading.sizes import comparison as size_comparison
from ng12_common.reading.spelling import Speller

# Words dropped from both terms and text before matching (articles, pronouns and possessives, the
# side, and counts of one: "both", "one", "single").
_STOP = (
    ARTICLES_AND_SIDES
    | PRONOUNS
    | {
        "both",
        "one",
        "single",
        "is",
        "was",
        "has",
        "have",
        "had",
        "been",
        "are",
        "were",
    }
)

#: More ways of saying a lump grew: "twice the size now", "doubled in size", "grew", "bigger than it was".
_GREW = (
    r"(?:twice|double|three times|treble) (?:the|its) size|doubled in size|grew|got larger|getting larger|"
    r"bigger than (?:before|it was|when)|larger than (?:before|it was|when)|size has increased"
)
# A lump's size compared with everyday objects in order ("was like a pea, now more like a grape")
_SIZE_CHANGE: dict[str | None, set[str]] = {
    "grew": {"increasing_in_size", "change_in_size"},
    "changed": {"change_in_size"},
}
# Modifier cues: (modifier, pattern). Checked on the normalised segment text.
_MODIFIER_CUES: list[tuple[str, re.Pattern[str]]] = [
    ("non_visible", re.compile(r"\b(non ?visible|not visible|invisible|microscopic|dipstick|urine dip)\b")),
    # Blood in the urine that the patient reports (pee, wee, red or pink urine) is visible
    # haematuria by definition (NICE CKS Haematuria: visible = seen by the patient).
    (
        "visible",
        re.compile(
            r"\b(visible|frank|gross|macroscopic|seen|saw|noticed blood|red urine|pink urine|pee|wee|"
            r"red|pink|blood in (?:the |his |her )?urine|passing blood|passed blood)\b"
        ),
    ),
    ("unexplained", re.compile(r"\bunexplained\b")),
    (
        "persistent",
        re.compile(
            r"\b(persistent|persisting|persists|persist|ongoing|continuing|chronic|constant|not resolving)\b"
        ),
    ),
    # "repeat MSU", "repeat bloods" is a repeat test, not a recurrence
    (
        "recurrent",
        re.compile(
            r"\b(recurrent|recurring|recurs|recur|repeated|repeat(?! (?:msu|msus|test|tests|bloods?|"
            r"fbc|x ?ray|cxr|scan|urine|urinalysis|dip|dipstick|swab|culture|psa|fit|smear|ecg|"
            r"prescription|rx))|relapsing)\b"
        ),
    ),
    (
        "progressive",
        re.compile(
            r"\b(progressive|progressively|progressing|worsening|getting worse|got worse|worse over|"
            r"deteriorating|increasingly|gone weak over|weaker over)\b"
        ),
    ),
    (
        "frequent",
        re.compile(r"\b(frequent|frequently|often|most days|daily|every day|times (a|per) month)\b"),
    ),
    (
        "increasing_in_size",
        re.compile(
            r"\b(increasing in size|growing|getting bigger|enlarging|grown|got bigger|increased in size|"
            + _GREW
            + r")\b"
        ),
    ),
    (
        "change_in_size",
        re.compile(
            r"\b(change in size|changed in size|changing in size|changing size|increasing in size|growing|"
            r"getting bigger|enlarging|grown|got bigger|increased in size|shrinking|" + _GREW + r")\b"
        ),
    ),
    (
        "irregular_shape",
        # MacKie's 7-point checklist names this feature "change in shape"
        re.compile(
            r"\b(irregular shape|irregularly shaped|irregular (\w+ )?(border|outline|edges?|margins?)|"
            r"uneven (border|outline|edges?|margins?)|"
            r"(border|outline|edges?|margins?) (\w+ )?(irregular|uneven)|"
            r"wonky|asymmetric\w*|asymmetry|ragged edges?|notched (border|edges?)|"
            r"changed shape|change in shape|changing shape|changed in shape)\b"
        ),
    ),
    (
        "irregular_colour",
        # the 7-point checklist's "irregular colour" (MacKie's "change in colour"): more than one
        # colour in the lesion, as examination and patients describe it (DermNet: variegated)
        re.compile(
            r"\b(irregular colou?r|irregularly colou?red|variegated|multiple colou?rs|uneven colou?r|"
            r"(two|2|three|3|several|different|various|multiple) (different )?(colou?rs|shades)|patchy|"
            r"mottled|multicolou?red|(brown|black|grey|gray|blue|tan) (brown|black|grey|gray|blue|tan))\b"
        ),
    ),
    ("inflammation", re.compile(r"\b(inflamed|inflammation|erythematous|erythema|red and angry)\b")),
    ("oozing", re.compile(r"\b(oozing|oozes|weeping)\b")),
    (
        "change_in_sensation",
        re.compile(r"\b(change in sensation|altered sensation|itch|itchy|itching|itches)\b"),
    ),
    (
        "treatment_resistant",
        re.compile(
            r"\b(treatment resistant|resistant to treatment|refractory|not responding to treatment|"
            r"despite treatment|despite ppi|unresponsive to treatment)\b"
        ),
    ),
    # "never had anything like it before" says a symptom presents for the first time (NG12 1.5.12)
    (
        "first_presentation",
        re.compile(
            r"\b(first time|first presentation|new|new onset|newly|first episode|first ever|"
            r"(never|not|not ever) (had|experienced|noticed) "
            r"(this|it|that|anything like (this|it|that))( \w+)? before)\b"
        ),
    ),
    (
        "explained",
        re.compile(r"\b(due to|caused by|explained by|secondary to|attributed to|because of|explained)\b"),
    ),
]

_SIZE = re.compile(r"(\d+(?:\.\d+)?)\s*(mm|millimet(?:er|re)s?|cm|centimet(?:er|re)s?)\b")
_DURATION = re.compile(
    r"\b(more than |over |longer than |at least |for |lasting |since )?"
    r"(\d+(?:\.\d+)?)\s*(day|week|month|year)s?\b"
)
_NUMBER = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)(?![\w.])")
_DAYS = {"day": 1, "week": 7, "month": 30, "year": 365}
_EXPLAINED_BY = re.compile(
    r"\b(due to|caused by|explained by|secondary to|attributed to|because of)\b|(?<!un)\bexplained\b"
)
_LATERAL = re.compile(
    r"\b(one|single) (nipple|breast|side)\b|\b(unilateral|left|right)\b|\b(l|r|lt|rt) (nipple|breast)\b"
)
_SUGGEST = re.compile(r"\bsuggest(?:s|ing|ive of)\b")
_WORD_RUN = re.compile(r"\w+")  # where a term can start (terms start with a word character)
_SEGMENT_SPLIT = re.compile(r"\s*(?:[,;]|\band\b|\bbut\b|\bplus\b|\balso\b)\s*")
#: A list's separator (comma, semicolon, "and"): a negation carries across it ("denies SOB, haemoptysis,
#: chest pain"), as medspaCy's ConText scope runs on to the end of the sentence; "but", "plus" and
#: "also" end it.
_LIST_SEPARATOR = re.compile(r"^(?:\s|[,;]|\b(?:and|or|nor)\b)*$")
#: A bare list item: nothing before the finding's words, and after them nothing or the next item
#: joined by or/nor/and without a number ("weight loss or pain on swallowing"; not "chest pain for 2 weeks").
_BARE_AFTER = re.compile(r"^\s*(?:(?:or|nor|and)\b[^0-9]*)?$")
#: A list item of plain words ("urinary symptoms"); "?erythroplakia" or "2/52" is not one.
_PLAIN_ITEM = re.compile(r"[a-z]+(?: [a-z]+)*", re.I)
#: Words that end a negated list ("no cough, but has haemoptysis", "no pain, with a lump").
_LIST_TURNS = frozenset(
    "but however although though yet except apart has have had with complains reports now still presents "
    "noted is are was were new developed positive query possible possibly probable likely suspected "
    "suspicious impression imp".split()
)


MatchTier = Literal["exact", "lemma", "curated", "semantic"]
"""How a clause was normalised to a concept: 1 the guideline's words, exactly or by word stems;
2 a curated lay term or abbreviation; 3 embedding similarity (always reviewed)."""


class ConceptMatch(BaseModel):
    """One concept found in a phrase."""

    concept: str
    kind: str
    matched_text: str  # the normalised words that matched
    tier: MatchTier = "exact"
    score: float | None = None  # similarity, for the semantic tier
    context: ContextStatus | None = None  # negated, family, resolved, hypothetical (ConText)
    negated: bool = False
    modifiers: list[str] = Field(default_factory=list)  # sorted; may include "explained"
    qualifiers: dict[str, float] = Field(default_factory=dict)  # size_mm, duration_days
    value: float | None = None  # a numeric result given with a test ("FIT 12")


def normalise_phrase(text: str, keep_stop_words: bool = False) -> str:
    """Lower-case, accents folded, hyphens and punctuation to spaces, stop words dropped."""
    # Record arrows: "appetite \u2193" is reduced appetite, "\u2191 frequency" increased frequency.
    t = text.replace("\u2193", " reduced ").replace("\u2191", " increased ")
    t = unicodedata.normalize("NFKD", t)
    t = "".join(ch for ch in t if not unicodedata.combining(ch)).lower()
    t = t.replace("\u2019", "'").replace("'s ", " ").replace("'", "")
    # record shorthand (Oxford Handbook of General Practice): +ve positive, -ve negative ("Tinel +ve")
    t = re.sub(r"\+ ?ve\b", " positive ", t)
    t = re.sub(r"(?<![a-z0-9])- ?ve\b|(?<=[a-z0-9])-ve\b", " negative ", t)
    t = re.sub(r"\?(?=\s*[a-z])", " query ", t)  # "?mesothelioma" in a report: the query it raises
    t = re.sub(r"[^a-z0-9.,;]+", " ", t)
    t = _SUGGEST.sub("suggest", t)  # "X suggests Y" and "results suggest Y" say the same
    t = re.sub(r"(?<!\d)\.|\.(?!\d)", " ", t)  # keep decimal points only
    t = re.sub(r"\s*([,;])\s*", r" \1 ", t)
    words = [w for w in t.split() if keep_stop_words or w not in _STOP]
    return " ".join(words)


def _strip_punct(text: str) -> str:
    return re.sub(r"\s+", " ", text.replace(",", " ").replace(";", " ")).strip()


_GAP = r"(?: (?:" + "|".join(sorted(_STOP)) + r"))* "


class _Index:
    """All lexicon terms, grouped by first word. Matching is the leftmost-first scan of one
    alternation over every term, longest term first, run word by word: at each word only the
    terms starting with that word are tried (one precompiled pattern per first word). One big
    alternation is ~10x slower to match, and compiling a pattern per text's candidate terms cost
    ~12 ms per new text (Python compiles regular expressions in Python)."""

    def __init__(self, lexicon: Sequence[LexiconEntry]) -> None:
        terms: dict[str, tuple[str, str, MatchTier]] = {}
        for e in lexicon:
            exact = [e.label, e.concept.replace("_", " "), *e.terms]
            worded: list[tuple[str, MatchTier]] = [(x, "exact") for x in exact]
            worded += [(x, "curated") for x in e.synonyms]
            for raw, tier in worded:
                norm = _strip_punct(normalise_phrase(raw))
                if norm and norm not in terms:
                    terms[norm] = (e.concept, e.kind, tier)
        self.terms = terms
        # typing slips are corrected towards the lexicon's and the clinical word list's words
        self.speller = Speller(frozenset(w for t in terms for w in t.split()) | clinical_words())
        self.kinds: dict[str, str] = {e.concept: e.kind for e in lexicon}
        self.labels = {e.concept: e.label for e in lexicon}
        self.by_first: dict[str, list[str]] = {}
        for t in terms:
            self.by_first.setdefault(t.split()[0], []).append(t)
        self._patterns: dict[str, re.Pattern[str]] = {}
        # Lemma tier: every term as a sequence of word stems, grouped by the first stem.
        self.stems_by_first: dict[str, list[tuple[tuple[str, ...], str, str]]] = {}
        seen: set[tuple[str, ...]] = set()
        for t, (concept, kind, _tier) in terms.items():
            stems = tuple(_stem_words([w for w in t.split() if w not in _STOP]))
            if stems and stems not in seen:
                seen.add(stems)
                self.stems_by_first.setdefault(stems[0], []).append((stems, concept, kind))
        for cands in self.stems_by_first.values():
            cands.sort(key=lambda c: (-len(c[0]), c[0]))

    def lemma_hits(self, text: str, covered: list[tuple[int, int]]) -> list[tuple[int, int, str, str]]:
        """Terms found by word stems ("swallowing" for "swallow"), outside the spans already
        matched exactly: (start, end, concept, kind)."""
        words = [
            (m.start(), m.end(), m.group())
            for m in _WORD_RUN.finditer(text)
            if m.group() not in _STOP and not any(a <= m.start() < b for a, b in covered)
        ]
        stems = _stem_words([w for _a, _b, w in words])
        hits: list[tuple[int, int, str, str]] = []
        i = 0
        while i < len(words):
            found = None
            for cand, concept, kind in self.stems_by_first.get(stems[i], ()):
                n = len(cand)
                if tuple(stems[i : i + n]) == cand and _contiguous(text, words[i : i + n]):
                    found = (words[i][0], words[i + n - 1][1], concept, kind, n)
                    break
            if found:
                hits.append(found[:4])
                i += found[4]
            else:
                i += 1
        return hits

    def finditer(self, text: str) -> Iterator[re.Match[str]]:
        """Non-overlapping term matches in a normalised text, left to right; where several terms
        start at a word, the longest wins (the order of `ordered_terms`)."""
        end = 0
        for word in _WORD_RUN.finditer(text):
            if word.start() < end or word.group() not in self.by_first:
                continue
            m = self._pattern(word.group()).match(text, word.start())
            if m:
                end = m.end()
                yield m

    def _pattern(self, first: str) -> re.Pattern[str]:
        pattern = self._patterns.get(first)
        if pattern is None:
            pattern = self._patterns[first] = _compile_terms(ordered_terms(self.by_first[first]))
        return pattern

    def lookup(self, matched: str) -> tuple[str, str, MatchTier]:
        """The concept, kind and tier of a matched span (stop words the gap pattern allowed are
        dropped)."""
        key = " ".join(w for w in matched.split() if w not in _STOP and w not in (",", ";"))
        return self.terms.get(key) or self.terms[matched]


def _stem_words(words: list[str]) -> list[str]:
    return stems(words)


def _contiguous(text: str, words: list[tuple[int, int, str]]) -> bool:
    """The words follow each other with only spaces or stop words between them."""
    for (_a, b, _w), (c, _d, _x) in itertools.pairwise(words):
        gap = text[b:c].split()
        if any(g not in _STOP for g in gap):
            return False
    return True


def ordered_terms(terms: Iterable[str]) -> tuple[str, ...]:
    """Longest first (then alphabetical): the order in which terms are tried at one position."""
    return tuple(sorted(terms, key=lambda t: (-len(t), t)))


def _compile_terms(ordered: tuple[str, ...]) -> re.Pattern[str]:
    # A comma the GP types inside a term ("progressive, sub-acute loss ...") does not break it.
    alts = [(r"(?: [,;])?" + _GAP).join(re.escape(w) for w in t.split()) for t in ordered]
    return re.compile(r"\b(?:" + "|".join(alts) + r")\b")


@lru_cache(maxsize=8)
def _index_cached(key: tuple[tuple[str, str, str, tuple[str, ...], tuple[str, ...]], ...]) -> _Index:
    entries = [
        LexiconEntry(concept=c, kind=k, label=lab, synonyms=list(s), terms=list(t))  # type: ignore[arg-type]
        for c, k, lab, s, t in key
    ]
    return _Index(entries)


_LAST_INDEX: list[tuple[Sequence[LexiconEntry], int, _Index]] = []


def _index(lexicon: Sequence[LexiconEntry]) -> _Index:
    # The same lexicon object is passed for every phrase of every patient: skip re-keying it.
    if _LAST_INDEX and _LAST_INDEX[0][0] is lexicon and _LAST_INDEX[0][1] == len(lexicon):
        return _LAST_INDEX[0][2]
    key = tuple((e.concept, e.kind, e.label, tuple(e.synonyms), tuple(e.terms)) for e in lexicon)
    idx = _index_cached(key)
    _LAST_INDEX[:] = [(lexicon, len(lexicon), idx)]
    return idx


def prepare(lexicon: Sequence[LexiconEntry]) -> None:
    """Build the lexicon's matching index (terms, stems, the typing-slip speller and its English
    word list) now, when the knowledge is loaded, so that the first record read does not pay for it."""
    _index(lexicon)


def lexicon_maps(lexicon: Sequence[LexiconEntry]) -> tuple[dict[str, str], Mapping[str, str]]:
    """concept -> label and concept -> kind of a lexicon (built once per lexicon)."""
    idx = _index(lexicon)
    return idx.labels, idx.kinds


def _segments(text: str, protected: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Split at delimiters that do not fall inside a matched term."""
    spans: list[tuple[int, int]] = []
    start = 0
    for m in _SEGMENT_SPLIT.finditer(text):
        if any(a < m.end() and m.start() < b for a, b in protected):
            continue
        if m.start() > start:
            spans.append((start, m.start()))
        start = m.end()
    if start < len(text):
        spans.append((start, len(text)))
    return spans


def _continues_negated_list(text: str, negated_end: int, start: int, after: str) -> bool:
    """A bare item of a list whose previous item was negated: "denies SOB, haemoptysis, chest pain"."""
    if negated_end < 0 or negated_end > start or not _BARE_AFTER.match(after):
        return False
    between = text[negated_end:start]
    if _LIST_SEPARATOR.match(between):
        return True
    # items the lexicon does not know may stand between ("denies PR bleed, urinary symptoms, cough"):
    # short comma-separated items, none of which turns the list ("but has", "with", "except")
    if "," not in between:
        return False
    items = [i.strip() for i in re.split(r"[,;]|\b(?:and|or|nor)\b", between) if i.strip()]
    return all(
        _PLAIN_ITEM.fullmatch(i) is not None and len(i.split()) <= 3 and not (set(i.split()) & _LIST_TURNS)
        for i in items
    )


def clause_cues(text: str) -> tuple[list[str], dict[str, float]]:
    """The modifiers and qualifiers a clause states (for a concept found by other means)."""
    text = normalise_phrase(text, keep_stop_words=True)
    mods = _modifiers(text)
    mods.discard("explained")
    return sorted(mods), _qualifiers(text)


def _modifiers(text: str) -> set[str]:
    found = {mod for mod, pat in _MODIFIER_CUES if pat.search(text)}
    found |= _SIZE_CHANGE.get(size_comparison(text), set())
    if "non_visible" in found:
        found.discard("visible")
    if _LATERAL.search(text):
        found.add("unilateral")
    return found


def _qualifiers(text: str) -> dict[str, float]:
    q: dict[str, float] = {}
    m = _SIZE.search(text)
    if m:
        v = float(m.group(1))
        q["size_mm"] = v * 10 if m.group(2).startswith("c") else v
    d = _DURATION.search(text)
    if d:
        days = float(d.group(2)) * _DAYS[d.group(3)]
        if d.group(1) and d.group(1).strip() in ("more than", "over", "longer than"):
            days += 1
        q["duration_days"] = days
    return q


class _Rewrite(BaseModel):
    pattern: str
    replace: str
    reason: str


@lru_cache(maxsize=1)
def _rewrites() -> tuple[tuple[re.Pattern[str], str], ...]:
    raw = resources.files("ng12_common.reading").joinpath("data", "rewrites.yaml").read_text("utf-8")
    rules = [_Rewrite.model_validate(x) for x in yaml.safe_load(raw)]
    return tuple((re.compile(r.pattern), r.replace) for r in rules)


def rewrite_shorthand(text: str) -> str:
    """Record shorthand to words the lexicon knows ("lost 8 kg" -> "lost weight"); data/rewrites.yaml."""
    for pattern, replacement in _rewrites():
        text = pattern.sub(replacement, text)
    return text


class PhraseReading(BaseModel):
    """What one phrase says: the concepts it names, and its clauses that name none."""

    matches: list[ConceptMatch] = Field(default_factory=list)
    unmatched_clauses: list[str] = Field(default_factory=list)  # normalised text, stop words kept


def _add_composed(
    text: str, hits: list[tuple[int, int, str, str, MatchTier]], kinds: Mapping[str, str]
) -> set[tuple[int, int]]:
    """Add the clause's composed findings (a finding word and a body site: ``reading.compose``)
    to `hits`, replacing generic matches of the same words and matches that ran across a comma;
    the spans stated absent."""
    absent: set[tuple[int, int]] = set()
    generic = generic_concepts()
    for c in compose(text):
        if c.concept not in kinds and c.concept != NO_FINDING:
            continue
        overlap = [h for h in hits if h[0] < c.end and c.start < h[1]]
        # a composed finding gives way to a specific term, unless that term ran across a comma
        # ("spleen not palpable, liver ..." is not "palpable liver")
        if any(h[2] not in generic and not re.search(r"[,;]", text[h[0] : h[1]]) for h in overlap):
            continue
        if c.described_by_feel:  # "L breast 2cm hard, irregular lump": the lump it describes
            overlap += [h for h in hits if h[2] == "lump" and h not in overlap]
        for h in overlap:
            hits.remove(h)
        if c.concept == NO_FINDING:
            continue
        hits.append((c.start, c.end, c.concept, kinds[c.concept], "curated"))
        if c.negated:
            absent.add((c.start, c.end))
    return absent


def _prefer_longer_stem_matches(
    stem_hits: list[tuple[int, int, str, str]], hits: list[tuple[int, int, str, str, MatchTier]]
) -> None:
    """A term found by word stems that wholly contains shorter exact matches replaces them: "blood
    when I cough" is the lay term "blood when coughing" (haemoptysis), not the exact word "cough"
    inside it. The longest reading wins whichever tier found it; a stem match that only partly
    overlaps an exact one changes nothing. ``stem_hits``: every stem match of the text."""
    for start, end, concept, kind in stem_hits:
        overlap = [h for h in hits if h[0] < end and start < h[1]]
        if not overlap or any(h[0] < start or h[1] > end for h in overlap):
            continue
        if end - start <= max(h[1] - h[0] for h in overlap):
            continue
        for h in overlap:
            hits.remove(h)
        hits.append((start, end, concept, kind, "lemma"))


def match_concepts(phrase: str, lexicon: Sequence[LexiconEntry]) -> list[ConceptMatch]:
    """Concepts named in one free-text phrase, with modifiers, qualifiers and ConText status."""
    return read_phrase(phrase, lexicon).matches


def read_phrase(phrase: str, lexicon: Sequence[LexiconEntry]) -> PhraseReading:
    """Concepts named in one phrase (tiers 1 and 2: the guideline's words exactly or by stems,
    curated lay terms), and the clauses that named none (candidates for the semantic tier)."""
    idx = _index(lexicon)
    rules = default_rules()
    text = rewrite_shorthand(normalise_phrase(phrase, keep_stop_words=True))
    text, _slips = idx.speller.correct(text)  # "breathles" is "breathless" (reading.spelling)
    hits: list[tuple[int, int, str, str, MatchTier]] = []
    for m in idx.finditer(text):
        concept, kind, tier = idx.lookup(m.group(0))
        hits.append((m.start(), m.end(), concept, kind, tier))
    stem_hits = idx.lemma_hits(text, [])
    if stem_hits:  # none over the whole text: none outside the exact matches either
        _prefer_longer_stem_matches(stem_hits, hits)
        for start, end, concept, kind in idx.lemma_hits(text, [(a, b) for a, b, *_ in hits]):
            hits.append((start, end, concept, kind, "lemma"))
    absent_spans = _add_composed(text, hits, idx.kinds)
    hits.sort()
    segs = _segments(text, [(a, b) for a, b, *_ in hits])
    if not hits:
        return PhraseReading(unmatched_clauses=[text[a:b].strip() for a, b in segs if text[a:b].strip()])

    def seg_of(pos: int) -> int:
        return next((i for i, (a, b) in enumerate(segs) if a <= pos < b), len(segs) - 1)

    seg_has = {seg_of(a) for a, *_ in hits}
    negated_end = -1  # where the last finding a negation made absent ends (a list carries it on)
    out: dict[str, ConceptMatch] = {}
    for start, end, concept, kind, tier in hits:
        si = seg_of(start)
        s0, s1 = segs[si]
        before, after = text[s0:start], text[end:s1]
        # Cues in the segment (including the matched words: "visible haematuria", "recurrent
        # pneumonia"), but not inside other concepts' words. "Explained" only by what follows.
        others = [(a, b) for a, b, *_ in hits if s0 <= a < s1 and (a, b) != (start, end)]
        own = text[s0:s1]
        for a, b in others:
            own = own.replace(text[a:b], " _ ")
        mods = _modifiers(own)
        mods.discard("explained")
        if _EXPLAINED_BY.search(after):
            mods.add("explained")
        quals = _qualifiers(text[s0:s1])
        if not any(sj in seg_has for sj in range(si)):  # leading words qualify the first concept
            for sj in range(si):
                mods |= _modifiers(text[segs[sj][0] : segs[sj][1]])
        span_end = s1
        for sj in range(si + 1, len(segs)):  # trailing segments without a concept qualify it
            if sj in seg_has:
                break
            tail = text[segs[sj][0] : segs[sj][1]]
            span_end = segs[sj][1]
            mods |= _modifiers(tail)
            for k, v in _qualifiers(tail).items():
                quals.setdefault(k, v)
        # a size comparison across them ("was the size of a pea, now the size of a walnut")
        mods |= _SIZE_CHANGE.get(size_comparison(text[s0:span_end]), set())
        context = "negated" if (start, end) in absent_spans else rules.status(before, after)
        if context is None and _continues_negated_list(text, negated_end, start, after):
            context = "negated"
        if context == "negated":
            negated_end = end
        value = None
        if kind == "test":
            num = _NUMBER.search(after)
            value = float(num.group(1)) if num else None
        cm = ConceptMatch(
            concept=concept,
            kind=kind,
            matched_text=text[start:end],
            tier=tier,
            context=context,
            negated=context == "negated",
            modifiers=sorted(mods),
            qualifiers=quals,
            value=value,
        )
        prev = out.get(concept)
        if prev is None:
            out[concept] = cm
        else:  # same concept twice: merge what the phrase says about it (present wins)
            prev.modifiers = sorted(set(prev.modifiers) | set(cm.modifiers))
            prev.qualifiers = {**cm.qualifiers, **prev.qualifiers}
            if prev.context is not None and cm.context is None:
                prev.context, prev.tier, prev.matched_text = None, cm.tier, cm.matched_text
            prev.negated = prev.context == "negated"
            prev.value = prev.value if prev.value is not None else cm.value
    unmatched = [text[a:b].strip() for i, (a, b) in enumerate(segs) if i not in seg_has and text[a:b].strip()]
    return PhraseReading(matches=list(out.values()), unmatched_clauses=unmatched)


# --------------------------------------------------------------------------------------------
# Record -> facts
# --------------------------------------------------------------------------------------------


def parse_sex(gender: str | None) -> str | None:
    g = (gender or "").strip().lower()
    if g in ("female", "f", "woman", "girl"):
        return "female"
    if g in ("male", "m", "man", "boy"):
        return "male"
    return None


def parse_smoking(text: str | None) -> str | None:
    t = (text or "").strip().lower()
    if not t:
        return None
    if re.search(r"\b(never|non ?smoker|non-smoker|nonsmoker|lifelong non)", t):
        return "never"
    if re.search(r"\b(ex|former|quit|stopped|previous|past)\b", t):
        return "ex"
    if re.search(r"\b(current|smoker|smokes|smoking)\b", t):
        return "current"
    return None


def add_match(facts: PatientFacts, m: ConceptMatch, text: str) -> None:
    """Record one match in the facts: absent, history, a test value, or a symptom or finding
    (modifiers and qualifiers merged with what the record already said about it)."""
    kind = m.kind
    if m.negated:
        facts.negated.add(m.concept)
        return
    if m.context is not None:  # someone else's, resolved, or conditional advice: not a finding
        return
    if kind == "history":
        facts.history.add(m.concept)
        return
    if kind == "test":
        if m.value is not None:
            facts.tests[m.concept] = m.value
        return
    mods = set(m.modifiers)
    prev = facts.symptoms.get(m.concept)
    if prev is not None:
        mods |= prev.modifiers
    quals = {**(prev.qualifiers if prev else {}), **m.qualifiers}
    facts.symptoms[m.concept] = SymptomFact(modifiers=mods, qualifiers=quals, text=text)
    if kind == "finding":
        facts.findings.add(m.concept)
