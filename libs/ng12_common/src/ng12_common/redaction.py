"""Personal data redaction before anything is stored, logged or sent to a remote model.

Presidio's analyzer with its maintained recognisers finds:
- NHS numbers (`UK_NHS`, modulus-11 checksum validated: a 10-digit number that fails the check
  is left alone, so a lab value is not mistaken for one);
- UK postcodes, phone numbers (the `phonenumbers` library, GB region) and e-mail addresses;
- names, by pattern: a title followed by capitalised words ("Mrs Jane Smith", "Dr Patel"), and
  "name is / called / patient" followed by a capitalised name. No NER model is downloaded (this
  runs offline on a blank spaCy pipeline), so a bare name without such a cue is not found:
  docs/security.md says so.
Each finding is replaced by its type in angle brackets (`<UK_NHS>`, `<PERSON>`).
The engine takes a few seconds to build; it is built once per process, on first use.
"""

from __future__ import annotations

import re
import tempfile
import threading
from dataclasses import dataclass
from typing import Any

ENTITY_MIN_SCORE = {
    "UK_NHS": 0.5,
    "UK_POSTCODE": 0.05,
    "PHONE_NUMBER": 0.3,
    "EMAIL_ADDRESS": 0.5,
    "PERSON": 0.5,
}
_TITLE_NAME = r"\b(?:Mr|Mrs|Ms|Miss|Mx|Dr|Prof)\.?\s+[A-Z][a-z'’-]+(?:\s+[A-Z][a-z'’-]+){0,2}\b"
_EMAIL = r"\b[A-Za-z0-9._%+-]{1,64}@[A-Za-z0-9-]{1,63}(?:\.[A-Za-z0-9-]{1,63})+\b"
_CUED_NAME = (
    r"(?i:\b(?:name\s+is|named|called|patient\s+name:?|pt\s+name:?|name:))"
    r"\s+[A-Z][a-z'’-]+(?:\s+[A-Z][a-z'’-]+){0,2}\b"
)


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

    def redact(self, text: str) -> str:
        if not text:
            return text
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
