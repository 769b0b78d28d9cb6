"""`python -m assessment`: configure logging and serve the app with uvicorn on HOST:PORT."""

from __future__ import annotations

import sys

from assessment.app import SERVICE, create_app
from assessment.patients import JsonPatientStore, PatientStoreError
from assessment.settings import AssessmentSettings
from ng12_common.http_app import serve
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
    serve(create_app(settings, store), settings.host, settings.port)


if __name__ == "__main__":
    main()
