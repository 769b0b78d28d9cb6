"""`python -m assessment`: serve the assessment app with uvicorn on HOST:PORT, HTTP_WORKERS
processes."""

from __future__ import annotations

import sys

from fastapi import FastAPI

from assessment.app import SERVICE, create_app
from assessment.patients import JsonPatientStore, PatientStoreError
from assessment.settings import AssessmentSettings
from ng12_common.http_app import serve
from ng12_common.logs import configure_logging
from ng12_common.settings import load_settings


def _store(settings: AssessmentSettings) -> JsonPatientStore:
    try:
        return JsonPatientStore(settings.patients_file)
    except PatientStoreError as exc:
        sys.stderr.write(f"{SERVICE}: {exc}\n")
        raise SystemExit(2) from None


def app() -> FastAPI:
    """The app of one worker process (uvicorn calls this factory in each)."""
    settings = load_settings(AssessmentSettings, SERVICE)
    configure_logging(SERVICE, settings.log_level)
    return create_app(settings, _store(settings))


def main() -> None:
    settings = load_settings(AssessmentSettings, SERVICE)  # fail here, once, on bad configuration
    configure_logging(SERVICE, settings.log_level)  # the supervisor's own lines (workers, restarts)
    _store(settings)  # and on an unreadable patients file
    serve("assessment.__main__:app", settings.host, settings.port, settings.http_workers)


if __name__ == "__main__":
    main()
