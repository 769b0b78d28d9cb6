"""Test results as people write them, read against NG12's numbers or documented reference ranges.

``{"Hb": "118 g/L"}``, ``haemoglobin_g_per_l: 98``, ``"platelets": 512``, ``PSA 3.8`` in a symptom
line, ``"SPEP": "paraprotein band"``, ``"FIT": "7 ug/g"``, HbA1c now and a year ago: each becomes a
:class:`LabReading` that names the analyte, the value in the canonical unit, the rule applied and
its source (``data/lab_tests.yaml``), and what it means for the criteria:

- NG12's own thresholds (FIT, CA125, PSA, the 7-point score): the value goes to the criteria, which
  hold NG12's number;
- a finding NG12 names without a number (low haemoglobin, thrombocytosis, raised white cell count,
  hypercalcaemia, new-onset diabetes, high blood glucose, results that suggest myeloma): the
  documented range decides, sex- and age-specific where it differs ("Hb 118 g/L < 120 g/L (women)
  -> low haemoglobin levels");
- a known test NG12 uses no result of (BP, CRP, eGFR...): read, and listed as not used.
"""

from __future__ import annotations

import re
from functools import lru_cache
from importlib import resources
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field

LabKind = Literal["ng12_threshold", "reference_range", "qualitative", "not_ng12"]
_EARLIER = re.compile(
    r"\b(ago|previous|previously|prior|last year|a year|1 year|one year|12 months|baseline|old|"
    r"earlier|before|"
    r"in 20\d\d|20\d\d)\b"
)
_FASTING = re.compile(r"\bfasting\b|\bfbg\b")
_NUM = re.compile(r"(?<![\w.])([<>]=?|≤|≥)?\s*(\d+(?:\.\d+)?)")


class Band(BaseModel):
    model_config = ConfigDict(extra="forbid")
    value: float
    label: str
    sex: Literal["female", "male"] | None = None
    age_gte: int | None = None
    age_lt: int | None = None

    def covers(self, sex: str | None, age: int | None) -> bool:
        if self.sex is not None and sex != self.sex:
            return False
        if self.age_gte is not None and (age is None or age < self.age_gte):
            return False
        return not (self.age_lt is not None and (age is None or age >= self.age_lt))


class LabTest(BaseModel):
    """One analyte in lab_tests.yaml."""

    model_config = ConfigDict(extra="forbid")
    analyte: str
    names: list[str]
    kind: LabKind
    unit: str = ""
    units: dict[str, float | str] = Field(default_factory=dict)
    guess_below: dict[str, float | str] | None = None
    finding: str | None = None
    test: str | None = None  # the criteria's test name, for ng12_threshold
    below: list[Band] = Field(default_factory=list)
    above: list[Band] = Field(default_factory=list)
    at_least: list[Band] = Field(default_factory=list)
    fasting_at_least: float | None = None
    new_onset: bool = False
    positive_words: list[str] = Field(default_factory=list)
    negative_words: list[str] = Field(default_factory=list)
    # qualitative tests reported as a number (a ratio): inside [low, high] is normal, outside suggests
    normal_range: tuple[float, float] | None = None
    source: str


class LabReading(BaseModel):
    """What one result was read as, shown in the response (``test_interpretations``)."""

    key: str
    value: Any = None
    analyte: str
    kind: LabKind
    value_used: float | None = None
    unit: str = ""
    earlier: bool = False  # a previous result ("HbA1c a year ago")
    finding: str | None = None  # the concept it establishes (present when the rule fired)
    test: str | None = None  # the criteria test it feeds
    rule: str = ""  # "118 g/L < 120 g/L (women)"
    source: str = ""


NOT_SUGGESTIVE = "-> not suggestive"


def _norm(text: str) -> str:
    t = text.lower().replace("µ", "u").replace("μ", "u").replace("_", " ").replace("-", " ")
    t = re.sub(r"[^a-z0-9%/.<>=≤≥ ]+", " ", t)
    return " ".join(t.split())


@lru_cache(maxsize=1)
def lab_tests() -> tuple[LabTest, ...]:
    raw = resources.files("ng12_common.reading").joinpath("data", "lab_tests.yaml").read_text("utf-8")
    return tuple(LabTest.model_validate(x) for x in yaml.safe_load(raw))


@lru_cache(maxsize=1)
def _name_pattern() -> tuple[re.Pattern[str], dict[str, LabTest]]:
    by_name: dict[str, LabTest] = {}
    for t in lab_tests():
        for n in t.names:
            by_name.setdefault(_norm(n), t)
    alts = sorted(by_name, key=len, reverse=True)
    return re.compile(r"(?<![a-z0-9])(" + "|".join(re.escape(a) for a in alts) + r")(?![a-z0-9])"), by_name


def find_test(key: str) -> LabTest | None:
    """The analyte a result's name refers to ("haemoglobin_g_per_l" -> haemoglobin), or None."""
    pattern, by_name = _name_pattern()
    m = pattern.search(_norm(key))
    return by_name[m.group(1)] if m else None


def _dcct_to_ifcc(percent: float) -> float:
    """HbA1c % (DCCT) to mmol/mol (IFCC): (% - 2.15) x 10.929 (IFCC/NGSP master equation)."""
    return round((percent - 2.15) * 10.929, 1)


def _convert(test: LabTest, value: float, unit_text: str) -> tuple[float, str]:
    """The value in the canonical unit, and a note when a unit was converted or assumed."""
    u = unit_text.replace(" ", "")
    for name, factor in sorted(test.units.items(), key=lambda kv: -len(kv[0])):
        if name.replace(" ", "") and name.replace(" ", "") in u:
            if factor == "dcct":
                return _dcct_to_ifcc(value), f"{value:g}% = {_dcct_to_ifcc(value):g} mmol/mol"
            f = float(factor)
            if f != 1:
                return round(value * f, 3), f"{value:g} {name} = {value * f:g} {test.unit}"
            return value, ""
    if test.guess_below and value < float(test.guess_below["value"]):
        factor = test.guess_below["factor"]
        if factor == "dcct":
            return _dcct_to_ifcc(value), f"{value:g} read as % (= {_dcct_to_ifcc(value):g} mmol/mol)"
        converted = round(value * float(factor), 3)
        return converted, f"{value:g} read as g/dL (= {converted:g} {test.unit})"
    return value, ""


def _number(value: Any) -> tuple[float | None, str]:
    """A number and the text after it ("118 g/L" -> 118, "g/l"); comparators kept as the bound."""
    if isinstance(value, bool):
        return None, ""
    if isinstance(value, (int, float)):
        return float(value), ""
    text = _norm(str(value))
    m = _NUM.search(text)
    if not m:
        return None, text
    number = float(m.group(2))
    if m.group(1) in ("<", "<=", "≤"):  # "<4" (FIT below detection) counts as below the bound
        number = max(number - 0.01, 0.0)
    return number, text[m.end() :]


def _read_ratio(base: LabReading, test: LabTest, value: Any) -> LabReading:
    """A qualitative test reported as a number: outside the laboratory's normal range suggests."""
    assert test.normal_range is not None
    low, high = test.normal_range
    number, _rest = _number(value)
    if number is None:
        base.rule = f"no number in {value!r}"
    elif low <= number <= high:
        base.rule = f"{number:g} within {low:g}-{high:g} -> not suggestive"
    else:
        base.finding = test.finding
        base.rule = f"{number:g} outside {low:g}-{high:g} -> results suggest myeloma"
    return base


def read_result(
    key: str, value: Any, sex: str | None, age: int | None, test: LabTest | None = None
) -> LabReading | None:
    """One result read, or None when the analyte is unknown."""
    test = test or find_test(key)
    if test is None:
        return None
    key_n = _norm(key)
    earlier = bool(_EARLIER.search(key_n))
    base = LabReading(
        key=key, value=value, analyte=test.analyte, kind=test.kind, earlier=earlier, source=test.source
    )
    if test.kind == "not_ng12":
        base.rule = "NG12 uses no result of this test"
        return base
    if test.kind == "qualitative":
        if test.normal_range is not None:
            return _read_ratio(base, test, value)
        words = _norm(str(value))
        if any(re.search(rf"\b{re.escape(_norm(w))}\b", words) for w in test.negative_words):
            base.rule = f"{value} {NOT_SUGGESTIVE}"
            return base
        if any(re.search(rf"\b{re.escape(_norm(w))}\b", words) for w in test.positive_words):
            base.finding = test.finding
            base.rule = f"{value} -> results suggest myeloma"
            return base
        base.rule = f"{value!r} could not be read as positive or negative"
        base.kind = "qualitative"
        return base
    number, rest = _number(value)
    if number is None:
        base.rule = f"no number in {value!r}"
        return base
    unit_text = f"{key_n} {rest}"
    used, note = _convert(test, number, unit_text)
    base.value_used, base.unit = used, test.unit
    prefix = f"{note}; " if note else ""
    if test.kind == "ng12_threshold":
        base.test = test.test
        base.rule = f"{prefix}{used:g} {test.unit}, compared with NG12's own threshold"
        return base
    fired: Band | None = None
    op = ""
    bands: list[tuple[str, list[Band]]] = [("<", test.below), (">", test.above), ("≥", test.at_least)]
    if test.fasting_at_least is not None and _FASTING.search(key_n):
        bands = [("≥", [Band(value=test.fasting_at_least, label="fasting glucose")])]
    for symbol, group in bands:
        band = next((b for b in group if b.covers(sex, age)), None)
        if band is None:
            continue
        hit = (
            used < band.value if symbol == "<" else used > band.value if symbol == ">" else used >= band.value
        )
        if hit:
            fired, op = band, symbol
        elif not op:
            op = {"<": "≥", ">": "≤", "≥": "<"}[symbol]
            base.rule = (
                f"{prefix}{used:g} {test.unit} {op} {band.value:g} {test.unit} ({band.label}): "
                f"not {_finding_words(test)}"
            )
        break
    if fired is not None:
        base.finding = test.finding
        base.rule = (
            f"{prefix}{used:g} {test.unit} {op} {fired.value:g} {test.unit} ({fired.label}) "
            f"-> {_finding_words(test)}"
        )
    elif not base.rule:
        base.rule = f"{prefix}{used:g} {test.unit}: no reference range for this patient's age and sex"
    return base


def _finding_words(test: LabTest) -> str:
    return (test.finding or test.analyte).replace("_", " ")


# What may follow a test's name in a line: a separator, then a value with at most 3 unit words.
_INLINE_VALUE = re.compile(
    r"^\s*(?:is|was|of|at|=|:)?\s*(?P<value>[<>≤≥]?=?\s*\d+(?:\.\d+)?(?:\s*[a-z%/^0-9.]+){0,3})\s*$"
)
# A number of days, weeks or episodes is a duration, never a result ("can't swallow for 2 weeks").
_DURATION_WORDS = re.compile(
    r"\b(days?|weeks?|wks?|months?|years?|yrs?|hours?|hrs?|times|episodes?)\b|/52|/12"
)


def read_inline(clause: str, sex: str | None, age: int | None) -> LabReading | None:
    """A result typed in a free-text line ("PSA 3.8", "Hb 98 g/L", "temperature 38.5", "BP 132/84"):
    a test's name, at most 3 words into the line, followed directly by its value."""
    text = _norm(clause)
    pattern, by_name = _name_pattern()
    labelled = _labelled_report(clause, sex, age)
    if labelled is not None:
        return labelled
    for hit in pattern.finditer(text):
        if len(text[: hit.start()].split()) > 3:
            break
        value = _INLINE_VALUE.match(text[hit.end() :])
        if value is None or _DURATION_WORDS.search(value.group("value")):
            continue
        test = by_name[hit.group(1)]
        if test.kind == "qualitative":
            return None
        return read_result(text[: hit.end()], value.group("value").strip(), sex, age, test)
    return None


def _labelled_report(clause: str, sex: str | None, age: int | None) -> LabReading | None:
    """A qualitative test written as a labelled report line, "SPE: IgG paraprotein band 31 g/L": the
    whole label before the colon names the test, and what follows is its report (read like a
    test_results value). Without the label a qualitative word in a sentence is not taken as a result,
    and a report it cannot call positive or negative is left unread."""
    label, colon, report = clause.partition(":")
    if not colon or not report.strip():
        return None
    pattern, by_name = _name_pattern()
    name = _norm(label)
    hit = pattern.fullmatch(name)
    if hit is None or by_name[hit.group(1)].kind != "qualitative":
        return None
    reading = read_result(name, report.strip(), sex, age, by_name[hit.group(1)])
    if reading is None or (reading.finding is None and not reading.rule.endswith(NOT_SUGGESTIVE)):
        return None  # a report it cannot call positive or negative stays unread, for the GP
    return reading


def new_onset_adjustments(readings: list[LabReading], history_concepts: set[str]) -> None:
    """HbA1c: a current result at the threshold is new-onset diabetes only when no earlier result
    was at it too and the history records no diabetes (in place)."""
    current = [r for r in readings if r.analyte == "HbA1c" and not r.earlier and r.finding]
    earlier_high = any(r.analyte == "HbA1c" and r.earlier and r.finding for r in readings)
    known = bool(history_concepts & {"diabetes"})
    for r in current:
        if earlier_high or known:
            why = (
                "an earlier HbA1c was already at the threshold"
                if earlier_high
                else "diabetes is in the history"
            )
            r.rule += f"; not new-onset: {why}"
            r.finding = None
    for r in readings:
        if r.analyte == "HbA1c" and r.earlier and r.finding:
            r.rule += " (earlier result)"
            r.finding = None
