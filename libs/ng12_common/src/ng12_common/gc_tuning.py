"""Garbage-collector setting for the long-running services: steady tail latency.

After start-up a service's heap holds its long-lived objects (the embedding model and Chroma in
retrieval, the compiled LangGraph graphs, pydantic schemas, guideline knowledge). Python's full
(generation 2) collections walk every tracked object, so with a large start-up heap each one
pauses the event loop for milliseconds to tens of milliseconds, and those pauses become the p99
of every request in flight. `gc.freeze()` moves what exists at the end of start-up into a
permanent generation that collections skip; objects that requests allocate are collected as usual.
"""

from __future__ import annotations

import gc


def freeze_startup_heap() -> int:
    """Collect start-up garbage, then exempt the surviving objects from later collections.
    Returns how many objects were frozen (logged by the callers)."""
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()
