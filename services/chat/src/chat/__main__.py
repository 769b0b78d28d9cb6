"""`python -m chat`: serve the chat app with uvicorn on HOST:PORT, HTTP_WORKERS processes."""

from __future__ import annotations

from fastapi import FastAPI

from chat.app import SERVICE, create_app
from chat.settings import ChatSettings
from ng12_common.http_app import serve
from ng12_common.logs import configure_logging
from ng12_common.settings import load_settings


def app() -> FastAPI:
    """The app of one worker process (uvicorn calls this factory in each)."""
    settings = load_settings(ChatSettings, SERVICE)
    configure_logging(SERVICE, settings.log_level)
    return create_app(settings)


def main() -> None:
    settings = load_settings(ChatSettings, SERVICE)  # fail here, once, on bad configuration
    configure_logging(SERVICE, settings.log_level)  # the supervisor's own lines (workers, restarts)
    serve("chat.__main__:app", settings.host, settings.port, settings.http_workers)


if __name__ == "__main__":
    main()
