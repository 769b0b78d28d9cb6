"""The rules-only narrative (`reasoning`) and the payload the LLM narrates from.

Both are built only from the engine's outcome: what is met (with the evidence lines), what is
nearly met (with what is missing), judgement calls and unrecognised input. Nothing is invented.
"""

from __future__ import annotations

from typing import Any

from assessment.engine import EngineOutcome
from ng12_common.models import PatientRecord
from ng12_common.redaction import shared_redactor


def rules_reasoning(outcome: EngineOutcome, index_version: str) -> str:
    """A deterministic explanation of the engine's decision."""
    parts: list[str] = [
        f"Assessed against NICE NG12 (index {index_version}) by the deterministic criteria engine."
    ]
    if outcome.matched:
        if outcome.top_action in ("no_criteria_met", "incomplete"):
            parts.append(
                f"{len(outcome.matched)} recommendation(s) met, each offering a test whose result is already "
                f"recorded; the results decide, and the top action is {outcome.top_action}."
            )
        else:
            count = len(outcome.matched)
            parts.append(f"{count} recommendation(s) met; the most urgent action is {outcome.top_action}.")
        for m in outcome.matched:
            parts.append(f"{m.recommendation_id} ({m.action}, {m.cancer_site}): {'; '.join(m.criteria_met)}.")
    elif outcome.complete:
        parts.append("No NG12 referral or investigation criterion is met; safety netting (1.15) applies.")
    else:  # never reassure when part of the record was not read
        parts.append(
            "The assessment is incomplete: the findings that were read match no NG12 recommendation, "
            "and the findings listed below were not understood and not checked."
        )
    for n in outcome.near_misses:
        parts.append(f"Not met, {n.recommendation_id}: missing {'; '.join(n.missing)}.")
    for r in outcome.needs_review:
        parts.append(f"Clinician judgement ({r.recommendation_id}): {r.detail}.")
    if outcome.unrecognised:
        parts.append("Not understood (not checked against NG12): " + "; ".join(outcome.unrecognised) + ".")
    return " ".join(parts)


def _redacted_value(value: Any) -> Any:
    """A test result's value with personal data in its words replaced (numbers stay numbers)."""
    if isinstance(value, str):
        return shared_redactor().redact(value)
    if isinstance(value, list):
        return [_redacted_value(v) for v in value]
    if isinstance(value, dict):
        return {shared_redactor().redact(str(k)): _redacted_value(v) for k, v in value.items()}
    return value


def redacted_record(record: PatientRecord) -> dict[str, Any]:
    """The record without its name, and with personal data in every free-text field replaced by its
    type (NHS numbers, postcodes, phone numbers, titled names: ng12_common.redaction): symptoms,
    history, examination findings, smoking history, and test results' names and worded values.
    Blocking: call it in a thread (the redactor's engine is built at the app's start)."""
    redactor = shared_redactor()
    data = record.model_dump(exclude={"name", "patient_id"})
    for key in ("symptoms", "history", "exam_findings"):
        data[key] = [redactor.redact(line) for line in data.get(key) or []]
    data["smoking_history"] = redactor.redact(data.get("smoking_history") or "")
    data["test_results"] = _redacted_value(data.get("test_results") or {})
    return data


def llm_payload(record: PatientRecord, outcome: EngineOutcome) -> dict[str, Any]:
    """What the LLM sees: the redacted record and the engine's decision, nothing else. The
    decision's lines that quote the record (the evidence a criterion was met by, the clauses not
    understood) are redacted like the record."""
    redactor = shared_redactor()
    return {
        "patient": redacted_record(record),
        "top_action": outcome.top_action,
        "matched_recommendations": [
            {
                "id": m.recommendation_id,
                "action": m.action,
                "criteria_met": [redactor.redact(line) for line in m.criteria_met],
                "text": m.text,
            }
            for m in outcome.matched
        ],
        "near_misses": [{"id": n.recommendation_id, "missing": n.missing} for n in outcome.near_misses],
        "safety_netting": [r.text for r in outcome.safety_netting],
        "unrecognised": [redactor.redact(line) for line in outcome.unrecognised],
    }
