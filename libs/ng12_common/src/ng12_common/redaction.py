"""Personal data redaction before anything is stored, logged or sent to a remote model.

Presidio's analyzer with its maintained recognisers finds:
- NHS numbers (`UK_NHS`, modulus-11 checksum validated: a 10-digit number that fails the check
  is left alone, so a lab value is not mistaken for one);
- UK postcodes, phone numbers (the `phonenumbers` library, GB region) and e-mail addresses;
- names, by pattern: a title followed by capitalised words ("Mrs Jane Smith", "Dr Patel"), and
  "name is / called / patient name" followed by a capitalised name, or a bare "patient" followed
  by a first name and a surname. No NER model is downloaded (this
  runs offline on a blank spaCy pipeline), so a bare name without such a cue is not found:
  docs/security.md says so;
- dates (of birth or otherwise): numeric day/month/year ("12/03/1961", "12-03-61", "12.03.1961",
  "1961-03-12"), a day with a month name and a year ("12 March 1961", "March 12th, 1961"), and a
  year after "born"/"DOB". A recommendation number ("1.5.11") or "3/52" is not a date.
Each finding is replaced by its type in angle brackets (`<UK_NHS>`, `<PERSON>`, `<DATE>`).
One redactor for the whole system: the gateway redacts each message with it, and chat redacts
what it stores, logs or sends to a model with the same one (idempotent on redacted text).
The engine takes a few seconds to build; it is built once per process, on first use.
The redacted form of a text is remembered (`REMEMBERED` texts, least recently used forgotten
first): the output is a pure function of the text, GPs' follow-ups repeat ("What if they were
60?"), and a remembered one costs no analyser run and no worker-thread hop (`remembered`).
"""

from __future__ import annotations

import re
import tempfile
import threading
from dataclasses import dataclass
from typing import Any

from ng12_common.memo import Memo

ENTITY_MIN_SCORE = {
    "UK_NHS": 0.5,
    "UK_POSTCODE": 0.05,
    "PHONE_NUMBER": 0.3,
    "EMAIL_ADDRESS": 0.5,
    "PERSON": 0.5,
    "DATE": 0.5,
}
_TITLE_NAME = r"\b(?:Mr|Mrs|Ms|Miss|Mx|Dr|Prof)\.?\s+[A-Z][a-z'’-]+(?:\s+[A-Z][a-z'’-]+){0,2}\b"
_EMAIL = r"\b[A-Za-z0-9._%+-]{1,64}@[A-Za-z0-9-]{1,63}(?:\.[A-Za-z0-9-]{1,63})+\b"
#: A name after a cue. A bare "patient"/"pt" needs a first name AND a surname ("patient Jane
#: Smith"): one capitalised word after it is as often a test or a word ("patient Hb 98", "Patient
#: Aged 58", "a patient I'm referring") as a name, and redacting it would lose clinical facts.
_CUED_NAME = (
    r"(?i:\b(?:name\s+is|named|called|patient\s+name:?|pt\s+name:?|name:))"
    r"\s+[A-Z][a-z'’-]+(?:\s+[A-Z][a-z'’-]+){0,2}\b|"
    r"(?i:\b(?:patient|pt)\s+)(?!I['’]m\b)[A-Z][a-z'’-]+(?:\s+[A-Z][a-z'’-]+){1,2}\b"
)

_MONTH = (
    r"(?i:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|"
    r"sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
)
_DATES = (
    # 12/03/1961, 12-03-61: a real day and month ("aged 50-59/60" is not a date)
    r"\b(?:0?[1-9]|[12]\d|3[01])[/-](?:0?[1-9]|1[0-2])[/-](?:\d{4}|\d{2})\b",
    r"\b\d{1,2}\.\d{1,2}\.\d{4}\b",  # 12.03.1961 (not a recommendation number: 1.5.11)
    r"\b\d{4}-\d{2}-\d{2}\b",  # 1961-03-12
    rf"\b\d{{1,2}}(?:st|nd|rd|th)?\s+{_MONTH}\.?,?\s+\d{{4}}\b",  # 12 March 1961
    rf"\b{_MONTH}\.?\s+\d{{1,2}}(?:st|nd|rd|th)?,?\s+\d{{4}}\b",  # March 12th, 1961
    r"(?i:\b(?:born(?:\s+(?:on|in))?|dob|d\.o\.b\.?|date\s+of\s+birth)\s*:?\s*)\d{4}\b",  # born in 1961
)


REMEMBERED = 4096  # redacted texts kept per process (short chat messages: well under 2 MB)


@dataclass(frozen=True)
class Finding:
    entity: str
    start: int
    end: int
    score: float


class Redactor:
    def __init__(self) -> None:
        self._engine: Any = None
        self._lock = threading.Lock()
        self._redacted: Memo[str, str] = Memo(REMEMBERED)

    def _build(self) -> Any:
        import spacy
        from presidio_analyzer import AnalyzerEngine, Pattern, PatternRecognizer, RecognizerRegistry
        from presidio_analyzer.nlp_engine import SpacyNlpEngine
        from presidio_analyzer.predefined_recognizers import (
            NhsRecognizer,
            PhoneRecognizer,
            UkPostcodeRecognizer,
        )

        model_dir = tempfile.mkdtemp(prefix="ng12-blank-spacy-")
        spacy.blank("en").to_disk(model_dir)
        nlp = SpacyNlpEngine(models=[{"lang_code": "en", "model_name": model_dir}])
        registry = RecognizerRegistry(supported_languages=["en"])
        registry.add_recognizer(NhsRecognizer(supported_language="en"))
        registry.add_recognizer(UkPostcodeRecognizer(supported_language="en"))
        registry.add_recognizer(PhoneRecognizer(supported_regions=("GB",), supported_language="en"))
        registry.add_recognizer(  # presidio's EmailRecognizer fetches the public suffix list: not offline
            PatternRecognizer(
                supported_entity="EMAIL_ADDRESS",
                name="OfflineEmailRecognizer",
                patterns=[Pattern("email", _EMAIL, 0.8)],
                supported_language="en",
            )
        )
        registry.add_recognizer(
            PatternRecognizer(
                supported_entity="PERSON",
                name="TitledNameRecognizer",
                patterns=[Pattern("title name", _TITLE_NAME, 0.7), Pattern("cued name", _CUED_NAME, 0.6)],
                supported_language="en",
                global_regex_flags=re.MULTILINE,  # case matters: a name is capitalised
            )
        )
        registry.add_recognizer(
            PatternRecognizer(
                supported_entity="DATE",
                name="DateRecognizer",
                patterns=[Pattern(f"date {i}", p, 0.6) for i, p in enumerate(_DATES)],
                supported_language="en",
            )
        )
        return AnalyzerEngine(nlp_engine=nlp, registry=registry, supported_languages=["en"])

    def engine(self) -> Any:
        if self._engine is None:
            with self._lock:
                if self._engine is None:
                    self._engine = self._build()
        return self._engine

    def find(self, text: str) -> list[Finding]:
        results = self.engine().analyze(text=text, language="en")
        found = [
            Finding(r.entity_type, r.start, r.end, r.score)
            for r in results
            if r.score >= ENTITY_MIN_SCORE.get(r.entity_type, 0.5)
        ]
        return sorted(found, key=lambda f: (f.start, -f.end))

    def remembered(self, text: str) -> str | None:
        """The redacted text if this text was redacted recently (no analyser run), else None."""
        return text if not text else self._redacted.get(text)

    def redact(self, text: str) -> str:
        """The text with each finding replaced by its type in angle brackets."""
        if not text:
            return text
        done = self._redacted.get(text)
        return done if done is not None else self._redacted.put(text, self._replace(text))

    def _replace(self, text: str) -> str:
        out, cursor = [], 0
        for finding in self.find(text):
            if finding.start < cursor:
                continue  # overlaps one already replaced
            out.append(text[cursor : finding.start])
            out.append(f"<{finding.entity}>")
            cursor = finding.end
        out.append(text[cursor:])
        return "".join(out)


_shared = Redactor()


def shared_redactor() -> Redactor:
    """The process-wide redactor (its engine is built once)."""
    return _shared
