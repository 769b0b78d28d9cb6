"""Compositions: a finding word and a body site in one clause name the site's finding.

"firm fixed 2 cm mass on posterior vaginal wall" is a vaginal mass, "lump R breast" a breast lump,
"spleen palpable 5 cm below L costal margin" splenomegaly: a morphology and a finding site, as
SNOMED CT builds these findings (``data/compositions.yaml``, with sources). The lexicon's fixed
phrases cannot list every way of writing them; this reads them from the two parts.

``compose(text)`` works on a normalised clause text (``lexicon_match.normalise_phrase`` with stop
words kept) and returns ``Composed`` spans; ``lexicon_match.read_phrase`` merges them with its
tier 1-2 matches (a composed finding replaces a generic match of the same words, never a specific
one) and applies ConText and modifiers to them like any other match.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

import yaml
from pydantic import BaseModel, ConfigDict

from ng12_common.reading.clauses import stem

_TOKEN = re.compile(r"[a-z0-9.]+|[,;]")
_SIZE = re.compile(r"^\d+(\.\d+)?(cm|mm)$")
_NUMBER = re.compile(r"^\d+(\.\d+)?$")
_CLAUSE_BREAK = {",", ";", "and", "but", "plus", "also"}
# Articles, possessives and the side of the body (Oxford Handbook of General Practice shorthand:
# L, R, lt, rt): not part of a finding's wording. lexicon_match drops them too.
ARTICLES_AND_SIDES = frozenset(
    {
        "the",
        "a",
        "an",
        "his",
        "her",
        "their",
        "my",
        "he",
        "she",
        "they",
        "left",
        "right",
        "l",
        "r",
        "lt",
        "rt",
    }
)
# Not counted in the composition window: the above, and the small words that join a finding to
# its site ("a lump on the arm", "mass felt in the breast").
_SKIP = ARTICLES_AND_SIDES | {"of", "on", "in", "at", "over", "to", "is", "was", "are", "felt", "seen"}


class _Group(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    source: str
    words: list[str]
    sites: dict[str, list[str]]
    # read only when no other group composes anything in the clause; it names the generic noun
    # it describes ("L breast 2cm hard, irregular lump": the breast lump, not a second lump)
    described_by_feel: bool = False


class EntryGroup(BaseModel):
    """A whole-entry composition: the organ examined and a cue anywhere in the entry."""

    model_config = ConfigDict(extra="forbid")
    name: str
    source: str
    sites: list[str]
    cues: list[str]
    concept: str
    history: bool = False  # also read in the past history (a treatment recorded there)
    unless: list[str] = []  # the entry states the opposite of the organ ("benign feel"): not composed


class _Data(BaseModel):
    model_config = ConfigDict(extra="forbid")
    window: int
    blockers: list[str]
    negators: list[str]
    generic: list[str]
    groups: list[_Group]
    entry_groups: list[EntryGroup] = []


@lru_cache(maxsize=1)
def _data() -> _Data:
    raw = resources.files("ng12_common.reading").joinpath("data", "compositions.yaml").read_text("utf-8")
    return _Data.model_validate(yaml.safe_load(raw))


NO_FINDING = "-"
"""The concept of a composition that names no NG12 finding (bleeding from the vagina): it only
stops a generic match of the same words."""


@lru_cache(maxsize=1)
def _entry_patterns() -> tuple[
    tuple[re.Pattern[str], re.Pattern[str], str, bool, re.Pattern[str] | None], ...
]:
    # imported here: lexicon_match imports this module
    from ng12_common.lexicon_match import normalise_phrase

    def alt(words: list[str]) -> re.Pattern[str]:
        norm = sorted({normalise_phrase(w, keep_stop_words=True) for w in words}, key=len, reverse=True)
        return re.compile(r"\b(?:" + "|".join(re.escape(w) for w in norm if w) + r")\b")

    return tuple(
        (alt(g.sites), alt(g.cues), g.concept, g.history, alt(g.unless) if g.unless else None)
        for g in _data().entry_groups
    )


def compose_entry(norm_entry: str, history: bool = False) -> list[tuple[str, str]]:
    """Whole-entry compositions of one normalised entry: (concept, the cue's words). In the past
    history only the groups that say so are read."""
    out = []
    for sites, cues, concept, in_history, unless in _entry_patterns():
        if (history and not in_history) or (unless is not None and unless.search(norm_entry)):
            continue
        if sites.search(norm_entry):
            m = cues.search(norm_entry)
            if m:
                out.append((concept, m.group(0)))
    return out


@dataclass(frozen=True)
class Composed:
    """A composed finding: character span in the text, concept, whether it is stated absent."""

    start: int
    end: int
    concept: str
    negated: bool
    described_by_feel: bool = False


@dataclass(frozen=True)
class _Compiled:
    window: int
    blockers: tuple[tuple[str, ...], ...]
    negators: tuple[tuple[str, ...], ...]
    generic: frozenset[str]
    # (words as token tuples, (site token tuple, concept) pairs, described by feel)
    groups: tuple[tuple[tuple[tuple[str, ...], ...], tuple[tuple[tuple[str, ...], str], ...], bool], ...]
    first_tokens: frozenset[str]


@lru_cache(maxsize=1)
def _compiled() -> _Compiled:
    data = _data()

    def toks(s: str) -> tuple[str, ...]:
        return tuple(_word_form(t) for t in s.lower().split() if t not in _SKIP or len(s.split()) == 1)

    groups = []
    firsts: set[str] = set()
    for g in data.groups:
        words = tuple(sorted({toks(w) for w in g.words}, key=len, reverse=True))
        sites = tuple(
            sorted(
                ((toks(s), concept) for concept, names in g.sites.items() for s in names),
                key=lambda x: len(x[0]),
                reverse=True,
            )
        )
        groups.append((words, sites, g.described_by_feel))
        firsts.update(w[0] for w in words)
        firsts.update(s[0] for s, _c in sites)
    return _Compiled(
        window=data.window,
        blockers=tuple(toks(b) for b in data.blockers),
        negators=tuple(toks(b) for b in data.negators),
        generic=frozenset(data.generic),
        groups=tuple(groups),
        first_tokens=frozenset(firsts),
    )


@lru_cache(maxsize=1)
def site_concepts() -> frozenset[str]:
    """The concepts of a body site (every composition's site finding)."""
    return frozenset(c for g in _data().groups for c in g.sites if c != NO_FINDING)


def generic_concepts() -> frozenset[str]:
    """Lexicon concepts a composed finding replaces when they cover the same words."""
    return _compiled().generic


_BACK_AFTER_TIME = frozenset(
    {"day", "days", "week", "weeks", "wk", "wks", "month", "months", "year", "years", "while", "time", "ago"}
)
_BACK_AFTER_VERB = frozenset(
    {
        "came",
        "come",
        "comes",
        "coming",
        "went",
        "go",
        "goes",
        "going",
        "gone",
        "get",
        "got",
        "been",
        "bring",
        "brought",
        "sent",
        "send",
        "called",
        "phoned",
        "rang",
        "ring",
        "grew",
        "grown",
        "growing",
        "keeps",
        "kept",
        "put",
        "looking",
        "looked",
        "think",
        "thinking",
        "way",
        "further",
        "bounced",
        "flared",
        "is",
        "was",
        "are",
        "s",
    }
)
_BACK_BEFORE = frozenset({"again", "to", "from", "then"})


def _temporal_back(raw: list[tuple[int, int, str]], i: int) -> bool:
    """ "back" as time or return, not the body part: "2 months back", "came back", "back again"."""
    before = raw[i - 1][2] if i > 0 else ""
    after = raw[i + 1][2] if i + 1 < len(raw) else ""
    return before in _BACK_AFTER_TIME or before in _BACK_AFTER_VERB or after in _BACK_BEFORE


_BALL_BEFORE = frozenset(
    {"golf", "tennis", "ping", "pong", "cricket", "squash", "marble", "foot", "football", "rugby"}
)


def _not_testis_ball(raw: list[tuple[int, int, str]], i: int) -> bool:
    """ "ball" as a thing or the ball of a part ("ball of the foot", "like a golf ball"), not a testis."""
    before = raw[i - 1][2] if i > 0 else ""
    after = raw[i + 1][2] if i + 1 < len(raw) else ""
    return before in _BALL_BEFORE or after == "of"


def _tokens(text: str) -> list[tuple[int, int, str]]:
    """Tokens with character spans; "3 cm" and "3cm" become one "#cm" token; stop words dropped."""
    raw = [(m.start(), m.end(), m.group()) for m in _TOKEN.finditer(text)]
    out: list[tuple[int, int, str]] = []
    i = 0
    while i < len(raw):
        a, b, t = raw[i]
        if _NUMBER.match(t) and i + 1 < len(raw) and raw[i + 1][2] in ("cm", "mm"):
            out.append((a, raw[i + 1][1], "#cm"))
            i += 2
            continue
        if t == "back" and i + 1 < len(raw) and raw[i + 1][2] == "of":
            out.append((a, b, "back_of"))  # "the back of the knee" is the knee's, not the back
        elif t in ("ball", "balls") and _not_testis_ball(raw, i):
            out.append((a, b, "ball_thing"))  # "the ball of the foot", "like a golf ball": not the testis
        elif t == "back" and _temporal_back(raw, i):
            out.append((a, b, "back_when"))  # "2 months back", "came back", "back again": not the back
        elif _SIZE.match(t):
            out.append((a, b, "#cm"))
        elif t not in _SKIP:
            out.append((a, b, t))
        i += 1
    return out


# Words compared as written, not by stem: their stem is another word's ("testes" and "tests" are
# both "test"; "spotting" is light bleeding, not a "spot"; "arms and legs" weak is both sides,
# not one arm and leg).
_EXACT_ONLY = frozenset(
    {"testes", "tests", "test", "spot", "spots", "spotting", "dress", "dressing", "dressings", "arms", "legs"}
)


def _word_form(token: str) -> str:
    """The form a token is compared in: its Snowball stem ("bringing up" is "brings up", "lumps"
    a "lump"), except the composition's own markers ("#cm", "back_of") and the words above."""
    if token.startswith("#") or "_" in token or token in _EXACT_ONLY or not token.isalpha():
        return token
    return stem(token)


def _find(seq: list[str], i: int, options: tuple[tuple[str, ...], ...]) -> tuple[str, ...] | None:
    for opt in options:
        if tuple(seq[i : i + len(opt)]) == opt:
            return opt
    return None


def _outside(
    seq: list[str], lo: int, end: int, head: tuple[int, int], phrases: tuple[tuple[str, ...], ...]
) -> bool:
    """One of `phrases` occurs in seq[lo:end] other than wholly inside the head word's span."""
    for i in range(lo, end):
        hit = _find(seq[:end], i, phrases)
        if hit and not (head[0] <= i and i + len(hit) <= head[1]):
            return True
    return False


def _longest(sites: list[tuple[int, tuple[str, ...], str]]) -> list[tuple[int, tuple[str, ...], str]]:
    """Sites not inside a longer site of the same group found in the clause: "back passage" is the
    anus, not the back; "back of the knee" is not the back."""
    return [
        (i, s, c)
        for i, s, c in sites
        if not any(j <= i and i + len(s) <= j + len(t) and len(t) > len(s) for j, t, _c in sites)
    ]


def compose(text: str) -> list[Composed]:
    """The composed findings of one normalised clause text, left to right, not overlapping."""
    data = _compiled()
    toks = _tokens(text)
    if not any(_word_form(t) in data.first_tokens for *_x, t in toks):
        return []
    words = [_word_form(t) for *_x, t in toks]
    out: list[Composed] = []
    # clause pieces: token index ranges between breaks
    pieces: list[tuple[int, int]] = []
    start = 0
    for i, w in enumerate(words):
        if w in _CLAUSE_BREAK:
            pieces.append((start, i))
            start = i + 1
    pieces.append((start, len(words)))
    for fallback in (False, True):
        # the fallback groups describe a measured lump: only with a size, and nothing else composed
        if fallback and ("#cm" not in words or any(c.concept != NO_FINDING for c in out)):
            break
        for p0, p1 in pieces:
            _compose_piece(data, toks, words, p0, p1, fallback, out)
    out.sort(key=lambda c: c.start)
    return out


def _compose_piece(
    data: _Compiled,
    toks: list[tuple[int, int, str]],
    words: list[str],
    p0: int,
    p1: int,
    fallback: bool,
    out: list[Composed],
) -> None:
    """The compositions of one clause piece (tokens p0..p1) by the ordinary groups, or by the
    fallback groups (a lump described by its size and feel)."""
    seq = words[p0:p1]
    used: list[tuple[int, int]] = []
    for gwords, gsites, described in data.groups:
        if described != fallback:
            continue
        heads = [(i, hit) for i in range(len(seq)) if (hit := _find(seq, i, gwords))]
        sites = _longest(
            [(i, s, c) for i in range(len(seq)) for s, c in gsites if tuple(seq[i : i + len(s)]) == s]
        )
        for hi, hw in heads:
            # the nearest site that names a finding; a site with none of its own ("-") only when
            # no such site is in reach ("blood when I wipe my bottom" is rectal bleeding)
            best: tuple[tuple[bool, int], int, int, str] | None = None
            for si, sw, concept in sites:
                lo, hi_end = min(hi, si), max(hi + len(hw), si + len(sw))
                gap = hi_end - lo - len(hw) - len(sw)
                if gap < 0 or gap > data.window:
                    continue
                rank = (concept == NO_FINDING, abs(si - hi))
                if best is None or rank < best[0]:
                    best = (rank, si, len(sw), concept)
            if best is None:
                continue
            _rank, si, sn, concept = best
            lo, end = min(hi, si), max(hi + len(hw), si + sn)
            if any(a < end and lo < b for a, b in used):
                continue
            # a blocker or negator counts unless it lies wholly inside the finding word ("not healing")
            negated = _outside(seq, lo, end, (hi, hi + len(hw)), data.negators)
            if _outside(seq, lo, end, (hi, hi + len(hw)), data.blockers) and not negated:
                continue
            if concept != NO_FINDING:  # a later group's finding may still name what "-" left unnamed
                used.append((lo, end))
            out.append(
                Composed(
                    start=toks[p0 + lo][0],
                    end=toks[p0 + end - 1][1],
                    concept=concept,
                    negated=negated,
                    described_by_feel=described,
                )
            )
