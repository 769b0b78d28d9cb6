"""`python -m assessment`: configure logging and serve the app with uvicorn on HOST:PORT."""

from __future__ import annotations

import sys

import uvicorn

from assessment.app import SERVICE, create_app
from assessment.patients import JsonPatientStore, PatientStoreError
from assessment.settings import AssessmentSettings
from ng12_common.logs import configure_logging
from ng12_common.settings import load_settings


def main() -> None:
    settings = load_settings(AssessmentSettings, SERVICE)
    configure_logging(SERVICE, settings.log_level)
    try:
        store = JsonPatientStore(settings.patients_file)
    except PatientStoreError as exc:
        sys.stderr.write(f"{SERVICE}: {exc}\n")
        raise SystemExit(2) from None
    # log_config=None keeps our JSON logging; uvicorn handles SIGTERM with a graceful shutdown.
    uvicorn.run(
        create_app(settings, store),
        host=settings.host,
        port=settings.port,
        access_log=False,
        log_config=None,
        timeout_graceful_shutdown=10,
    )


if __name__ == "__main__":
    main()
