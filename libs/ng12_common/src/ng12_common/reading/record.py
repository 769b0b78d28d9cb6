"""Read a patient record the way a GP writes it: clauses, ConText, three tiers, tests, explanations.

``read_record(record, lexicon)`` turns each symptom, exam finding and history entry into clauses
and reads each clause:

1. tier 1 (the guideline's words, exactly or by word stems) and tier 2 (curated lay terms and
   abbreviations) through the lexicon (``ng12_common.lexicon_match.read_phrase``), with ConText
   (absent, someone else's, resolved, conditional advice);
2. a test result typed in the line ("PSA 3.8", "temperature 38.5") through ``reading.labs``;
3. a common finding NG12 does not use ("sore throat") is read and marked ``not_ng12``;
4. a clause with no clinical word ("twice this week") is context, not a finding;
5. what is left is pending for tier 3 (semantic similarity, through retrieval's Embed RPC; see
   ``reading.semantic``). ``apply_semantic`` records those decisions, and what stays unmatched is
   unread: the assessment is then not complete.

``finish`` applies the explanation rules (``reading.explanations``) and returns the facts for the
criteria evaluator. No I/O here: the semantic step is the caller's.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from ng12_common.criteria import PatientFacts, SymptomFact
from ng12_common.knowledge import LexiconEntry
from ng12_common.lexicon_match import (
    ConceptMatch,
    add_match,
    clause_cues,
    lexicon_maps,
    normalise_phrase,
    parse_sex,
    parse_smoking,
    read_phrase,
)
from ng12_common.models import FindingRead, FindingStatus, RecordField
from ng12_common.reading.clauses import (
    describes_only,
    infection_terms,
    is_clinical,
    lexicon_stems,
    other_finding,
    other_finding_stems,
    site_stems,
    split_sentences,
    stems,
    word_tokens,
    words_outside,
)
from ng12_common.reading.compose import compose_entry, site_concepts
from ng12_common.reading.context import ContextRules, default_rules
from ng12_common.reading.explanations import RECURRENT, apply_explanations, stated_diagnosis
from ng12_common.reading.labs import LabReading, new_onset_adjustments, read_inline, read_result
from ng12_common.reading.normal_exam import names_only_examined_parts, normal_exam
from ng12_common.reading.sizes import size_statement
from ng12_common.reading.whole_record import lesion_features, neurological_course, post_menopausal_bleeding

_FIELDS: tuple[RecordField, ...] = ("symptoms", "exam_findings", "history")
# A urine dipstick result: blood on a dipstick is non-visible haematuria (NICE CKS Haematuria);
# the other pads (nitrites, leucocytes, protein) are not NG12 findings.
_DIPSTICK = re.compile(r"\b(dipstick|urine dip|dip|urinalysis|ua|udip)\b", re.I)
_DIP_BLOOD = re.compile(
    r"\b(blood|bld|rbc|haem\w*)\b\s*[:=]?\s*(\+{1,4}|\d\s*\+|positive|pos|trace|tr|neg\w*|nil|-ve|0)", re.I
)
_DIP_NEGATIVE = re.compile(r"^(neg\w*|nil|-ve|0)$", re.I)


@dataclass
class PendingClause:
    """A clinical clause tiers 1-2 could not read: the semantic tier decides."""

    field: RecordField
    entry: str
    clause: str
    index: int  # position in RecordReading.findings of its placeholder


@dataclass
class RecordReading:
    """Everything read from one record (mutable until `finish`)."""

    facts: PatientFacts
    findings: list[FindingRead] = field(default_factory=list)
    labs: list[LabReading] = field(default_factory=list)
    pending: list[PendingClause] = field(default_factory=list)
    explanations: list[str] = field(default_factory=list)
    unread_tests: list[str] = field(default_factory=list)
    #: results of tests the reader does not know, reported negative or normal ("HSV PCR: negative"):
    #: they name no finding, so they are listed as not used and do not leave the record incomplete
    negative_unknown_tests: list[str] = field(default_factory=list)
    clinical_words: frozenset[str] = frozenset()  # stems of the lexicon's content words
    test_texts: list[str] = field(default_factory=list)  # "key: value" of every test result
    explained_review: list[str] = field(default_factory=list)  # explanations a clinician must confirm

    @property
    def unread(self) -> list[str]:
        """What was not understood, as typed: symptom and exam clauses (the whole entry when the
        clause is all of it) and test results ("key: value"). History is context, never unread."""
        clauses = [
            f.entry if normalise_phrase(f.entry, keep_stop_words=True) == f.clause else f.clause
            for f in self.findings
            if f.status == "unread"
        ]
        return [*clauses, *self.unread_tests]

    @property
    def complete(self) -> bool:
        return not self.unread


_TERMS_MEMO: list[tuple[Sequence[LexiconEntry], tuple[str, ...]]] = []


def _lexicon_terms(lexicon: Sequence[LexiconEntry]) -> tuple[str, ...]:
    """Every label, term and synonym of the symptom and finding concepts (memoised for the lexicon
    object the engine passes for every record)."""
    if _TERMS_MEMO and _TERMS_MEMO[0][0] is lexicon:
        return _TERMS_MEMO[0][1]
    terms = tuple(
        t for e in lexicon if e.kind in ("symptom", "finding") for t in (e.label, *e.terms, *e.synonyms)
    )
    _TERMS_MEMO[:] = [(lexicon, terms)]
    return terms


def _record_dict(record: Mapping[str, Any] | BaseModel) -> Mapping[str, Any]:
    return record.model_dump() if isinstance(record, BaseModel) else record


def _match_read(
    fld: RecordField, entry: str, clause: str, m: ConceptMatch, labels: Mapping[str, str]
) -> FindingRead:
    status = {"negated": "absent", "negated_background": "absent", None: "finding"}.get(
        m.context, m.context or "finding"
    )
    if status == "finding" and m.kind == "history":
        status = "history"
    return FindingRead(
        field=fld,
        entry=entry,
        clause=clause,
        concept=m.concept,
        label=labels.get(m.concept, m.concept.replace("_", " ")),
        tier=m.tier,
        evidence=m.matched_text,
        score=m.score,
        status=status,  # type: ignore[arg-type]
    )


def read_record(record: Mapping[str, Any] | BaseModel, lexicon: Sequence[LexiconEntry]) -> RecordReading:
    """Tiers 1-2, test results, ConText and context clauses; tier 3 is left pending."""
    r = _record_dict(record)
    sex = parse_sex(r.get("gender") or r.get("sex"))
    age = r.get("age")
    facts = PatientFacts(
        age=age,
        sex=sex,  # type: ignore[arg-type]
        smoking=parse_smoking(r.get("smoking_history") or r.get("smoking")),  # type: ignore[arg-type]
        duration_days=r.get("symptom_duration_days"),
    )
    labels, kinds = lexicon_maps(lexicon)
    reading = RecordReading(facts=facts)
    reading.clinical_words = lexicon_stems(_lexicon_terms(lexicon))
    rules = default_rules()
    for fld in _FIELDS:
        for entry in r.get(fld) or []:
            first = len(reading.findings)
            for sentence in split_sentences(str(entry)):
                if _read_dipstick(reading, fld, str(entry), sentence):
                    continue
                inline = read_inline(sentence, sex, age)
                if inline is not None:
                    reading.labs.append(inline)
                    reading.findings.append(
                        FindingRead(
                            field=fld, entry=entry, clause=sentence, status="test", evidence=inline.rule
                        )
                    )
                    continue
                phrase = read_phrase(sentence, lexicon)
                for m in phrase.matches:
                    if fld == "history" and m.negated and m.concept in facts.symptoms:
                        # "not on drugs linked to breast swelling" in the background does not
                        # cancel a breast lump recorded in the symptoms or on examination
                        m.negated, m.context = False, "negated_background"  # type: ignore[assignment]
                        reading.findings.append(_match_read(fld, entry, sentence, m, labels))
                        continue
                    add_match(facts, m, str(entry))
                    reading.findings.append(_match_read(fld, entry, sentence, m, labels))
                for clause in phrase.unmatched_clauses:
                    _read_leftover(reading, fld, str(entry), clause, rules, sex, age)
            _read_entry_compositions(reading, fld, str(entry), first, kinds, labels)
            if fld != "history":
                _site_bleeding(reading, first)
                _node_regions(reading, fld, str(entry), first, kinds, labels)
                _describing_clauses(reading, first)
                _normal_list(reading, str(entry), first)
    _the_bleeding_named_before(reading)
    post_menopausal_bleeding(reading, kinds, labels)
    neurological_course(reading)
    lesion_features(reading)
    for key, value in (r.get("test_results") or {}).items():
        reading.test_texts.append(f"{key}: {value}")
        _read_test(reading, str(key), value, sex, age, lexicon)
    return reading


#: A negation up to four words before an entry cue, in its clause: "no pleural mass", "no features to
#: suggest mesothelioma" (ConText's negation scope runs to the clause's end).
_NEGATED_CUE = re.compile(r"\b(no|not|non|nil|without)\s+([\w-]+\s+){0,4}$")


def _read_entry_compositions(
    reading: RecordReading,
    fld: RecordField,
    entry: str,
    first: int,
    kinds: Mapping[str, str],
    labels: Mapping[str, str],
) -> None:
    """An organ's examination whose description names an NG12 finding anywhere in the entry
    ("PR: hard, irregular, craggy L lobe ... feels malignant"; ``reading.compose``). The entry's
    unread clauses are that description, not unread findings."""
    norm = normalise_phrase(entry, keep_stop_words=True)
    for concept, cue in compose_entry(norm, history=fld == "history"):
        if concept not in kinds or _NEGATED_CUE.search(norm[: norm.find(cue)]):
            continue
        match = ConceptMatch(concept=concept, kind=kinds[concept], matched_text=cue, tier="curated")
        add_match(reading.facts, match, entry)
        label = labels.get(concept, concept)
        described = set()
        for i in range(first, len(reading.findings)):
            item = reading.findings[i]
            if item.status == "unread":
                item.status, item.evidence = "context", f"part of the entry read as {label}"
                described.add(i)
        reading.pending = [p for p in reading.pending if p.index not in described]
        reading.findings.append(_match_read(fld, entry, entry, match, labels))


# Lymph node regions (general anatomy: Gray's Anatomy; Oxford Handbook of Clinical Medicine,
# "Lymphadenopathy": nodes enlarged in two or more non-contiguous regions are generalised
# lymphadenopathy; patient.info Lymphadenopathy). The neck, the armpits and the groins are the
# regions a GP examines; bilateral nodes of one region are not generalised.
_NODE_REGIONS: dict[str, tuple[str, ...]] = {
    "neck": ("neck", "cervical", "supraclavicular", "submandibular", "occipital", "jaw"),
    "axilla": ("armpit", "armpits", "axilla", "axillae", "axillary", "underarm"),
    "groin": ("groin", "groins", "inguinal", "femoral"),
}
_NODE_WORDS = re.compile(r"\b(nodes?|glands?|lumps?|lymph\w*|lns?|lnx|lymphadenopathy|swellings?)\b")
_CLAUSE_CUT = re.compile(r"\s*(?:,|;|\band\b)\s*")
_NEGATING_START = re.compile(r"^(no|nil|not|without|neither|nor|none)\b")
_REGION_ONLY = re.compile(
    r"^(?:(?:both|bilateral|bilaterally|left|right|l|r|and|in|the|a|an|his|her|their|my|of|regions?|areas?|"
    r"sides?|nodes?|glands?|lumps?|for|over|about|since|past|last|\d+|wks?|weeks?|days?|months?|years?|too|also|"
    + "|".join(w for words in _NODE_REGIONS.values() for w in words)
    + r")\s*)+$"
)


def _node_regions(
    reading: RecordReading,
    fld: RecordField,
    entry: str,
    first: int,
    kinds: Mapping[str, str],
    labels: Mapping[str, str],
) -> None:
    """Enlarged nodes or lumps named in two or more of the neck, armpits and groins in one entry
    ("lumps in neck, armpits and groin"; "bilateral cervical, axillary and inguinal nodes") are
    generalised lymphadenopathy; the clauses that only name a further region are part of it."""
    concept = "generalised_lymphadenopathy"
    if concept not in kinds:
        return
    norm = normalise_phrase(entry, keep_stop_words=True)
    if not _NODE_WORDS.search(norm):
        return
    regions: set[str] = set()
    for clause in _CLAUSE_CUT.split(norm):
        if not clause or _NEGATING_START.match(clause):
            continue
        words = set(clause.split())
        regions |= {r for r, names in _NODE_REGIONS.items() if words & set(names)}
    if len(regions) < 2:
        return
    match = ConceptMatch(concept=concept, kind=kinds[concept], matched_text=entry, tier="curated")
    add_match(reading.facts, match, entry)
    described = set()
    for i in range(first, len(reading.findings)):
        item = reading.findings[i]
        if item.status == "unread" and _REGION_ONLY.match(item.clause):
            item.status, item.evidence = "context", f"a node region of {labels.get(concept, concept)}"
            described.add(i)
    reading.pending = [p for p in reading.pending if p.index not in described]
    reading.findings.append(_match_read(fld, entry, entry, match, labels))


_NORMAL_LIST = re.compile(
    r"\b(normal|nad|unremarkable|intact|nil abnormal)\s+(incl|inc|including|includes)\b"
)


def _normal_list(reading: RecordReading, entry: str, first: int) -> None:
    """An examination stated normal with a list of what it included ("neuro exam normal incl.
    cranial nerves, gait, coordination"): the short items of the list are normal too. An item that
    only names examined parts (normal_exam.yaml: gait, coordination, reflexes) is normal. Safety: any
    other item holding a finding word of the lexicon (other than a body site: "weakness L arm") is
    not taken as normal; it stays unread, so the record stays incomplete rather than hide it."""
    _parts_sharing_a_normal_status(reading, first)
    norm = normalise_phrase(entry, keep_stop_words=True)
    m = _NORMAL_LIST.search(norm)
    if m is None:
        return
    listed = set()
    for i in range(first, len(reading.findings)):
        item = reading.findings[i]
        if item.status != "unread" or len(item.clause.split()) > 3 or norm.find(item.clause) <= m.start():
            continue
        words = set(stems(word_tokens(item.clause)))
        if names_only_examined_parts(item.clause) or not words & (reading.clinical_words - site_stems()):
            item.status, item.evidence = "absent", "listed in an examination stated normal"
            listed.add(i)
    reading.pending = [p for p in reading.pending if p.index not in listed]


def _parts_sharing_a_normal_status(reading: RecordReading, first: int) -> None:
    """Examined parts joined before one normal status share it: in "breasts and axillae NAD" or
    "heart, lungs clear" the parts alone ("breasts") are as normal as the part the status follows.
    Only a clause that names examined parts and nothing else (normal_exam.yaml) takes the status."""
    items = reading.findings[first:]
    for k, item in enumerate(items):
        if item.status != "unread" or not names_only_examined_parts(item.clause):
            continue
        following = next((later for later in items[k + 1 :] if later.entry == item.entry), None)
        if following is not None and following.status == "absent" and normal_exam(following.clause):
            item.status, item.evidence = "absent", "examination stated normal"
            reading.pending = [p for p in reading.pending if p.index != first + k]


# Findings spread over the body surface: a clause naming a further surface says where they are.
_DISTRIBUTED = frozenset({"bruising", "petechiae", "pruritus", "rash", "bleeding"})


def _describing_clauses(reading: RecordReading, first: int) -> None:
    """In an entry where a finding was read, a clause made only of the words that describe a
    finding (site and side, size, shape, surface, edge, colour, consistency, fixity, tenderness:
    Macleod's Clinical Examination, describing a lump or lesion) describes that finding: "lump R
    thigh, 6 cm, firm, fixed", "bruises on arms and legs, tummy". It names no other finding. A
    clause holding any finding word (a lexicon word, "ulcer", "bleeding") is not described away."""
    entry_reads = reading.findings[first:]
    read = [f for f in entry_reads if f.concept is not None or f.status == "not_ng12"]
    if not read:
        return
    surfaces = any(f.concept in _DISTRIBUTED or f.status == "not_ng12" for f in read)
    # an examination that found nothing: the sites it names are what was examined ("both breasts
    # and axillae examined: no lumps"); never where a finding is present ("lump in groin and neck")
    examined = all(f.status == "absent" for f in entry_reads if f.concept is not None)
    described = set()
    for i in range(first, len(reading.findings)):
        item = reading.findings[i]
        if item.status == "unread" and (
            describes_only(item.clause, surfaces) or (examined and names_only_examined_parts(item.clause))
        ):
            item.status = "context"
            item.evidence = f"describes {read[0].label or read[0].evidence or 'the finding'} in this entry"
            described.add(i)
    reading.pending = [p for p in reading.pending if p.index not in described]


_BARE_BLEEDING = frozenset({"bleeding", "bleed", "bleeds", "bled", "blood"})


def _site_bleeding(reading: RecordReading, first: int) -> None:
    """Bleeding named without a site in an entry about one body site ("foreskin tight and cracked,
    bleeding from under it") is bleeding from that site, not the unexplained bleeding of NG12
    1.10.1 (easy bleeding, gums, nose): the bare bleeding is taken back."""
    entry_reads = reading.findings[first:]
    if not any(f.status == "finding" and f.concept in site_concepts() for f in entry_reads):
        return
    for f in entry_reads:
        if f.concept == "bleeding" and f.status == "finding" and (f.evidence or "") in _BARE_BLEEDING:
            fact = reading.facts.symptoms.get("bleeding")
            if fact is not None and fact.text == f.entry:
                del reading.facts.symptoms["bleeding"]
                reading.facts.findings.discard("bleeding")
            f.status, f.concept, f.label, f.tier = "context", None, None, None
            f.evidence = "bleeding from the site this entry describes"


#: Bleeding from a named site (NG12's own findings); "the bleeding" said after one of them is it.
_SITE_BLEEDING = frozenset(
    {
        "rectal_bleeding",
        "haematuria",
        "haemoptysis",
        "haematemesis",
        "post_menopausal_bleeding",
        "vulval_bleeding",
    }
)
_DEFINITE_BLEEDING = re.compile(r"\b(the|this|that|his|her|their|same)\s+(bleeding|bleed|blood)\b", re.I)


def _the_bleeding_named_before(reading: RecordReading) -> None:
    """ "The bleeding" (a definite reference: "pain went but the bleeding hasn't") in a record that
    names bleeding from a site is that bleeding, not the unexplained bleeding tendency of NG12 1.10.1
    (gums, nose, easy bleeding): the bare bleeding is taken back when every clause that gave it
    refers back that way."""
    facts = reading.facts
    if "bleeding" not in facts.symptoms or not (_SITE_BLEEDING & set(facts.symptoms)):
        return
    gave = [f for f in reading.findings if f.concept == "bleeding" and f.status == "finding"]
    if not gave or not all(_DEFINITE_BLEEDING.search(f.clause) for f in gave):
        return
    del facts.symptoms["bleeding"]
    facts.findings.discard("bleeding")
    for f in gave:
        f.status, f.concept, f.label, f.tier = "context", None, None, None
        f.evidence = "the bleeding from the site the record names"


def _read_dipstick(reading: RecordReading, fld: RecordField, entry: str, sentence: str) -> bool:
    """A urine dipstick line: blood on it is non-visible haematuria; True when the line was one."""
    if not _DIPSTICK.search(sentence):
        return False
    m = _DIP_BLOOD.search(sentence)
    if m is None:
        reading.findings.append(
            FindingRead(field=fld, entry=entry, clause=sentence, status="test", evidence="urine dipstick")
        )
        return True
    negative = bool(_DIP_NEGATIVE.match(m.group(2).strip()))
    match = ConceptMatch(
        concept="haematuria",
        kind="symptom",
        matched_text=m.group(0),
        tier="curated",
        negated=negative,
        context="negated" if negative else None,
        modifiers=["non_visible"],
    )
    add_match(reading.facts, match, entry)
    reading.findings.append(
        FindingRead(
            field=fld,
            entry=entry,
            clause=sentence,
            concept="haematuria",
            label="non-visible haematuria",
            tier="curated",
            evidence=m.group(0),
            status="absent" if negative else "finding",
        )
    )
    return True


def _read_leftover(
    reading: RecordReading,
    fld: RecordField,
    entry: str,
    clause: str,
    rules: ContextRules,
    sex: str | None,
    age: int | None,
) -> None:
    """A clause that named no lexicon concept: a test, a non-NG12 finding, context, or pending."""
    inline = read_inline(clause, sex, age)
    if inline is not None:
        reading.labs.append(inline)
        reading.findings.append(
            FindingRead(field=fld, entry=entry, clause=clause, status="test", evidence=inline.rule)
        )
        return
    # No finding was located in the clause, so a trigger may stand on either side of its words:
    # forward triggers read the whole clause ("no pain passing urine", "mother had breast
    # cancer"), and so do backward ones ("pain gone", "tooth pain now settled").
    status = rules.status(clause, clause)
    if status is None and _continues_absent_list(reading, entry, clause):
        status = "negated"
    if status is not None:
        shown: FindingStatus = "absent" if status == "negated" else status
        reading.findings.append(FindingRead(field=fld, entry=entry, clause=clause, status=shown))
        return
    other = other_finding(clause)
    if other is not None and _other_hides(reading, entry, clause, other):
        other = None
    if other is not None:
        reading.findings.append(
            FindingRead(
                field=fld, entry=entry, clause=clause, status="not_ng12", evidence=other, tier="curated"
            )
        )
        return
    stated = normal_exam(clause)
    if stated is not None:  # "axillae clear", "renal angles NT", "growth on 50th centile"
        shown_normal: FindingStatus = "absent" if stated.startswith("examination") else "not_ng12"
        reading.findings.append(
            FindingRead(field=fld, entry=entry, clause=clause, status=shown_normal, evidence=stated)
        )
        return
    if not is_clinical(clause, reading.clinical_words) or size_statement(clause):
        # a size given by an object ("now more like a golf ball") qualifies the finding before it
        reading.findings.append(FindingRead(field=fld, entry=entry, clause=clause, status="context"))
        return
    diagnosis = stated_diagnosis(clause, reading.clinical_words - site_stems())
    if diagnosis is not None:  # "GP impression: Osgood-Schlatter disease": a diagnosis, read as history
        reading.findings.append(
            FindingRead(
                field=fld, entry=entry, clause=clause, status="history", evidence=f"diagnosis: {diagnosis}"
            )
        )
        return
    if fld == "history":  # background the lexicon does not know: listed, never a finding
        reading.findings.append(FindingRead(field=fld, entry=entry, clause=clause, status="history_not_used"))
        return
    reading.findings.append(FindingRead(field=fld, entry=entry, clause=clause, status="unread"))
    reading.pending.append(
        PendingClause(field=fld, entry=entry, clause=clause, index=len(reading.findings) - 1)
    )


_LIST_OR = re.compile(r"\b(or|nor)\b")


def _continues_absent_list(reading: RecordReading, entry: str, clause: str) -> bool:
    """A negation runs on through a list ("no lumps, pain or discharge"): a clause of the list that
    names no finding, straight after a finding of the same entry read as absent, is absent too."""
    if not _LIST_OR.search(clause) or len(word_tokens(clause)) > 6:
        return False
    same = [f for f in reading.findings if f.entry == entry]
    return bool(same) and same[-1].status == "absent"


_NEGATIVE_VALUE = re.compile(
    r"^(no|none|nil|negative|neg|-ve|absent|not seen|not present|not detected|false|n)\.?$", re.I
)


_RESULT_STEMS = frozenset(stems(["positive", "negative"]))
#: A result that reports nothing found, whatever the test: it cannot name an NG12 finding.
_NOTHING_FOUND = re.compile(
    r"^(negative|neg|-ve|not detected|none detected|normal|nad|unremarkable|within normal limits|wnl|"
    r"no abnormality detected|no abnormalities detected)\.?$",
    re.I,
)


def _other_hides(reading: RecordReading, entry: str, clause: str, other: str) -> bool:
    """Safety: a finding NG12 does not use is never read where it could hide an NG12 finding. True
    when the rest of the clause holds an NG12 finding word (a content word of the lexicon), or when
    the term is an infection the entry calls persistent or recurrent (NG12 1.10.1). "Positive" and
    "negative" state the result of the sign or test named ("Tinel's sign positive"): no finding."""
    if (words_outside(clause, other) - _RESULT_STEMS) & (reading.clinical_words - site_stems()):
        return True
    return other in infection_terms() and bool(
        RECURRENT.search(normalise_phrase(entry, keep_stop_words=True))
    )


def _read_test(
    reading: RecordReading,
    key: str,
    value: Any,
    sex: str | None,
    age: int | None,
    lexicon: Sequence[LexiconEntry],
) -> None:
    if _read_dipstick(reading, "test_results", f"{key}: {value}", f"{key}: {value}"):
        return
    lab = read_result(key, value, sex, age)
    if lab is not None:
        reading.labs.append(lab)
        return
    # Not a known analyte: the key and value may still name a finding ("dermoscopy": "suggests melanoma").
    phrase = read_phrase(f"{key.replace('_', ' ')} {value}", lexicon)
    found = [m for m in phrase.matches if m.kind != "test"]
    if isinstance(value, str):  # a report of an examination or scan ("USS calf": "indeterminate lesion")
        _labels, kinds = lexicon_maps(lexicon)
        norm = normalise_phrase(f"{key.replace('_', ' ')} {value}", keep_stop_words=True)
        for concept, cue in compose_entry(norm):
            if concept in kinds and not _NEGATED_CUE.search(norm[: norm.find(cue)]):
                found.append(
                    ConceptMatch(concept=concept, kind=kinds[concept], matched_text=cue, tier="curated")
                )
    if isinstance(value, (str, bool)) and _NEGATIVE_VALUE.match(str(value).strip()):
        # a finding named by the key and answered no ("visible haematuria": "no") is absent
        for m in found:
            m.negated, m.context = True, "negated"  # type: ignore[assignment]
    if not found and isinstance(value, str):
        found = [m for m in read_phrase(f"results {value}", lexicon).matches if m.kind != "test"]
    if not found and isinstance(value, str) and _NOTHING_FOUND.match(value.strip()):
        reading.negative_unknown_tests.append(f"{key}: {value}")
    elif not found:
        reading.unread_tests.append(f"{key}: {value}")
    for m in found:
        add_match(reading.facts, m, f"{key}: {value}")
        reading.findings.append(
            FindingRead(
                field="test_results",
                entry=f"{key}: {value}",
                clause=f"{key} {value}",
                concept=m.concept,
                label=m.concept.replace("_", " "),
                tier=m.tier,
                evidence=m.matched_text,
                status="absent" if m.negated else "finding",
            )
        )


_ABSENCE_LABEL = re.compile(r"\b(absent|absence|loss of|lost|no|without|reduced|decreased)\b")
_PRESENCE_CLAUSE = re.compile(r"\b(present|normal|intact|seen|equal|symmetrical|symmetric|preserved|brisk)\b")


def _opposite_polarity(label: str, clause: str) -> bool:
    """Similarity does not see polarity: a finding defined by an absence or loss ("absent red
    reflex") is never matched to a clause that states the thing present or normal."""
    return bool(_ABSENCE_LABEL.search(label.lower())) and bool(_PRESENCE_CLAUSE.search(clause.lower()))


def apply_semantic(
    reading: RecordReading,
    decisions: Sequence[tuple[str | None, str, float] | None],
    lexicon: Sequence[LexiconEntry],
) -> None:
    """Record tier 3's decision for each pending clause, in order: (concept, kind, score) when it
    matched, (None, "not_ng12", score) when the nearest description is a finding NG12 does not
    use, None when it abstained (the clause stays unread)."""
    labels, _kinds = lexicon_maps(lexicon)
    for pending, decision in zip(reading.pending, decisions, strict=True):
        if decision is None:
            continue
        concept, kind, score = decision
        item = reading.findings[pending.index]
        item.score = round(score, 3)
        if concept is None:
            # safety: nearest to a finding NG12 does not use, but the clause holds a word only NG12
            # findings use ("lump", "shin"; not "pain", which "knee pain" also has): it stays unread
            # rather than hide that finding
            words = set(stems(word_tokens(pending.clause)))
            if words & (reading.clinical_words - other_finding_stems()):
                item.score = None
                continue
            item.status, item.tier = "not_ng12", "semantic"
            continue
        if _opposite_polarity(labels.get(concept, concept), pending.clause):
            item.score = None  # "red reflex present" is not "absent red reflex": it stays unread
            continue
        modifiers, qualifiers = clause_cues(pending.clause)
        match = ConceptMatch(
            concept=concept,
            kind=kind,
            matched_text=pending.clause,
            tier="semantic",
            score=score,
            modifiers=modifiers,
            qualifiers=qualifiers,
        )
        add_match(reading.facts, match, pending.entry)
        item.concept, item.label, item.tier, item.status = (
            concept,
            labels.get(concept, concept),
            "semantic",
            "finding",
        )
        item.evidence = pending.clause
    reading.pending = []


def _iron_deficiency(reading: RecordReading) -> None:
    """Low haemoglobin with low ferritin is iron-deficiency anaemia (NICE CKS Anaemia - iron
    deficiency: anaemia with serum ferritin below 30 micrograms/L)."""
    facts = reading.facts
    if {
        "low_haemoglobin",
        "low_ferritin",
    } <= facts.findings and "iron_deficiency_anaemia" not in facts.symptoms:
        facts.symptoms["iron_deficiency_anaemia"] = SymptomFact(text="low haemoglobin and low ferritin")
        facts.findings.add("iron_deficiency_anaemia")
        reading.explanations.append(
            "Iron-deficiency anaemia read from the results: low haemoglobin with ferritin below "
            "30 micrograms/L "
            "(NICE CKS Anaemia - iron deficiency)."
        )


def _add_derived(
    reading: RecordReading, concept: str, text: str | None, modifiers: set[str], note: str
) -> None:
    facts = reading.facts
    if concept in facts.symptoms or concept in facts.negated:
        return
    facts.symptoms[concept] = SymptomFact(text=text, modifiers=set(modifiers))
    facts.findings.add(concept)
    reading.explanations.append(note)


# Looser or more frequent stools for this long are a change in bowel habit (NICE CG27, 2005: "persistent
# for 6 weeks"); a shorter diarrhoea is most often infective and self-limiting (NICE CKS Diarrhoea -
# adult's assessment).
_CHANGED_BOWEL_HABIT_DAYS = 42


def _derived(reading: RecordReading) -> None:
    """Findings that are, by definition, other findings NG12 names:

    - an enlarged liver and an enlarged spleen are hepatosplenomegaly;
    - low haemoglobin (WHO 2011 thresholds, ``data/lab_tests.yaml``) is anaemia: WHO defines
      anaemia by exactly those thresholds;
    - a central neurological deficit recorded as progressive or worsening is a "progressive,
      sub-acute loss of central neurological function" (NG12 1.9.1), and such a loss is "newly
      abnormal central neurological function" (NG12 1.9.2, children and young people).
    """
    facts = reading.facts
    s = facts.symptoms
    if "hepatomegaly" in s and "splenomegaly" in s and "hepatosplenomegaly" not in facts.negated:
        mods = s["hepatomegaly"].modifiers & s["splenomegaly"].modifiers
        _add_derived(
            reading,
            "hepatosplenomegaly",
            f"{s['hepatomegaly'].text}; {s['splenomegaly'].text}",
            mods,
            "Hepatosplenomegaly read from an enlarged liver and an enlarged spleen recorded together.",
        )
    if "low_haemoglobin" in facts.findings and "anaemia" not in s:
        _add_derived(
            reading,
            "anaemia",
            s["low_haemoglobin"].text if "low_haemoglobin" in s else "low haemoglobin",
            set(),
            "Anaemia read from the haemoglobin below the WHO 2011 threshold for age and sex "
            "(WHO defines anaemia by these thresholds).",
        )
    neuro_new, neuro_prog = (
        "newly_abnormal_central_neurological_function",
        "progressive_loss_of_central_neurological_function",
    )
    if neuro_new in s and "progressive" in s[neuro_new].modifiers:
        _add_derived(
            reading,
            neuro_prog,
            s[neuro_new].text,
            s[neuro_new].modifiers,
            "A central neurological deficit recorded as progressive or worsening is read as a progressive, "
            "sub-acute loss of central neurological function (NG12 1.9.1).",
        )
    if neuro_prog in s:
        _add_derived(
            reading,
            neuro_new,
            s[neuro_prog].text,
            s[neuro_prog].modifiers,
            "A progressive loss of central neurological function is newly abnormal central neurological "
            "function (NG12 1.9.2).",
        )


def _bowel_habit(reading: RecordReading) -> None:
    """Diarrhoea that persists (6 weeks or more, or recorded as persistent) is a change in bowel habit;
    read after the explanation rules, so an explained diarrhoea gives an explained change."""
    facts = reading.facts
    s = facts.symptoms
    diarrhoea = s.get("diarrhoea")
    if diarrhoea is not None and "change_in_bowel_habit" not in s:
        days = diarrhoea.qualifiers.get("duration_days", facts.duration_days or 0)
        if "persistent" in diarrhoea.modifiers or days >= _CHANGED_BOWEL_HABIT_DAYS:
            _add_derived(
                reading,
                "change_in_bowel_habit",
                diarrhoea.text,
                diarrhoea.modifiers,
                "Persistent diarrhoea (looser or more frequent stools for 6 weeks or more, or recorded as "
                "persistent) is read as a change in bowel habit (NICE CG27 and NICE CKS Gastrointestinal "
                "tract (lower) cancers: a change in bowel habit to looser stools or increased frequency).",
            )


def finish(reading: RecordReading) -> PatientFacts:
    """Apply the test readings and the explanation rules; the facts for the criteria evaluator."""
    new_onset_adjustments(reading.labs, reading.facts.history)
    for lab in reading.labs:
        if lab.earlier:
            continue
        if lab.test is not None and lab.value_used is not None:
            reading.facts.tests[lab.test] = lab.value_used
        if lab.finding is not None:
            reading.facts.findings.add(lab.finding)
            if lab.finding not in reading.facts.symptoms:
                reading.facts.symptoms[lab.finding] = SymptomFact(text=f"{lab.key}: {lab.value}")
    _iron_deficiency(reading)
    _derived(reading)
    reading.explanations.extend(apply_explanations(reading))
    _bowel_habit(reading)
    return reading.facts


def facts_from_record(
    record: Mapping[str, Any] | BaseModel, lexicon: Sequence[LexiconEntry]
) -> tuple[PatientFacts, list[str]]:
    """The facts of a record read with tiers 1-2 (no semantic tier), and what was not understood."""
    reading = read_record(record, lexicon)
    return finish(reading), reading.unread
