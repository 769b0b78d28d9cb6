"""`python -m retrieval`: start the retrieval gRPC server with settings from the environment."""

from __future__ import annotations

import asyncio
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

from ng12_common.logs import configure_logging
from ng12_common.settings import load_settings
from ng12_common.tracing import configure_tracing, shutdown_tracing
from retrieval.settings import RetrievalSettings


def main() -> None:
    settings = load_settings(RetrievalSettings, "retrieval")
    configure_logging("retrieval", settings.log_level)
    configure_tracing("retrieval")  # before the server is built: its interceptor comes first
    from retrieval.server import serve

    try:
        asyncio.run(serve(settings))
    finally:
        shutdown_tracing()


if __name__ == "__main__":
    main()
