"""`python -m gateway`: configure logging and serve the app with uvicorn on HOST:PORT."""

from __future__ import annotations

from gateway.app import SERVICE, create_app
from gateway.settings import GatewaySettings
from ng12_common.http_app import serve
from ng12_common.logs import configure_logging
from ng12_common.settings import load_settings


def main() -> None:
    settings = load_settings(GatewaySettings, SERVICE)
    configure_logging(SERVICE, settings.log_level)
    serve(create_app(settings), settings.host, settings.port)


if __name__ == "__main__":
    main()
