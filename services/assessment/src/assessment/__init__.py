"""NG12 assessment service: does this patient meet NG12 criteria? (HTTP, LangGraph, gRPC retrieval)."""
