"""Chat service configuration, read from the environment (see deploy/stack_spec.py)."""

from __future__ import annotations

from pydantic import Field

from ng12_common.settings import HttpServiceSettings


class ChatSettings(HttpServiceSettings):
    port: int = Field(default=8002, ge=1, le=65535)
    redis_url: str = Field(pattern=r"^rediss?://", description="redis://host:port/db of the session store")
    retrieval_addr: str = Field(
        min_length=3, description="host:port of retrieval (or of its replicas, comma-separated)"
    )
    chat_history_ttl_seconds: int = Field(default=86400, ge=60, le=90 * 86400)
    chat_max_turns: int = Field(
        default=50, ge=1, le=1000, description="user/assistant pairs kept per session"
    )
    chat_key_prefix: str = Field(default="ng12:chat", pattern=r"^[A-Za-z0-9:_-]{1,64}$")
    retrieval_timeout_seconds: float = Field(default=3.0, gt=0, le=60)
    redis_timeout_seconds: float = Field(default=2.0, gt=0, le=30)
    chat_llm_enabled: bool = Field(default=False, description="write answers with Gemini on Vertex AI")
    vertex_project: str = Field(default="", description="Vertex AI project (only with chat_llm_enabled)")
    vertex_location: str = Field(default="europe-west2")
    chat_llm_model: str = Field(default="gemini-2.5-flash")
    chat_llm_timeout_seconds: float = Field(
        default=8.0, gt=0, description="a slower Gemini answer or rewrite falls back to the rules-only one"
    )
