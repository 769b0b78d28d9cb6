"""`python -m gateway`: serve the gateway app with uvicorn on HOST:PORT, HTTP_WORKERS processes."""

from __future__ import annotations

from fastapi import FastAPI

from gateway.app import SERVICE, create_app
from gateway.settings import GatewaySettings
from ng12_common.http_app import serve
from ng12_common.logs import configure_logging
from ng12_common.settings import load_settings


def app() -> FastAPI:
    """The app of one worker process (uvicorn calls this factory in each)."""
    settings = load_settings(GatewaySettings, SERVICE)
    configure_logging(SERVICE, settings.log_level)
    return create_app(settings)


def main() -> None:
    settings = load_settings(GatewaySettings, SERVICE)  # fail here, once, on bad configuration
    configure_logging(SERVICE, settings.log_level)  # the supervisor's own lines (workers, restarts)
    serve("gateway.__main__:app", settings.host, settings.port, settings.http_workers, settings.metrics_port)


if __name__ == "__main__":
    main()
