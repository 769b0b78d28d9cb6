"""NG12 chat service: questions over NG12 in multi-turn sessions (HTTP, LangGraph, Redis, gRPC)."""
