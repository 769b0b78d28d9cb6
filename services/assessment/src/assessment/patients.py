"""The patient store: an interface, and its implementation over a JSON file (data/patients.json).

Later stores (an EHR adapter, a database) implement the same `PatientStore` protocol.
"""

from __future__ import annotations

import builtins
from pathlib import Path
from typing import Protocol

from pydantic import TypeAdapter, ValidationError

from ng12_common.models import Patient

_PATIENTS = TypeAdapter(list[Patient])


class PatientStoreError(Exception):
    """The patient store cannot be loaded; the message names the file and the problem."""


class PatientStore(Protocol):
    def get(self, patient_id: str) -> Patient | None: ...

    def list(self) -> builtins.list[Patient]: ...


class JsonPatientStore:
    """Patients read once from a JSON array of `Patient` objects; ids must be unique."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._by_id = self._load(path)

    @staticmethod
    def _load(path: Path) -> dict[str, Patient]:
        try:
            raw = path.read_bytes()
        except OSError as exc:
            raise PatientStoreError(
                f"cannot read patient file {path} (PATIENTS_FILE): {exc.strerror}"
            ) from None
        try:
            patients = _PATIENTS.validate_json(raw)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()[:5]
            )
            raise PatientStoreError(
                f"patient file {path} is not a valid list of patients: {problems}"
            ) from None
        by_id: dict[str, Patient] = {}
        for patient in patients:
            if patient.patient_id in by_id:
                raise PatientStoreError(f"patient file {path} repeats patient_id {patient.patient_id!r}")
            by_id[patient.patient_id] = patient
        return by_id

    def get(self, patient_id: str) -> Patient | None:
        return self._by_id.get(patient_id)

    def list(self) -> builtins.list[Patient]:
        return list(self._by_id.values())

    def __len__(self) -> int:
        return len(self._by_id)
