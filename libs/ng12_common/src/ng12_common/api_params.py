"""Path parameters shared by the gateway and the services, validated the same way everywhere.

Ids are restricted to a safe alphabet so they can be placed in downstream URLs and Redis keys
without escaping, and a bad id is a 422 naming the parameter rather than a confusing 404.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Path

from ng12_common.models import SESSION_ID_PATTERN

PATIENT_ID_PATTERN = r"^[A-Za-z0-9_-]{1,64}$"

PatientId = Annotated[str, Path(pattern=PATIENT_ID_PATTERN, description="Patient id, e.g. PT-101.")]
SessionId = Annotated[
    str, Path(pattern=SESSION_ID_PATTERN, description="Chat session id (1-128 chars of [A-Za-z0-9_-]).")
]
