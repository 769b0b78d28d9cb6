"""`python -m gateway`: configure logging and serve the app with uvicorn on HOST:PORT."""

from __future__ import annotations

import uvicorn

from gateway.app import SERVICE, create_app
from gateway.settings import GatewaySettings
from ng12_common.logs import configure_logging
from ng12_common.settings import load_settings


def main() -> None:
    settings = load_settings(GatewaySettings, SERVICE)
    configure_logging(SERVICE, settings.log_level)
    # log_config=None keeps our JSON logging; uvicorn handles SIGTERM with a graceful shutdown.
    uvicorn.run(
        create_app(settings),
        host=settings.host,
        port=settings.port,
        access_log=False,
        log_config=None,
        timeout_graceful_shutdown=10,
    )


if __name__ == "__main__":
    main()
