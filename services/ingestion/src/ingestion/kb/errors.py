"""Typed errors raised while building the NG12 knowledge base."""

from __future__ import annotations


class KnowledgeBaseError(ValueError):
    """The input cannot be turned into an NG12 knowledge base (bad file or not NG12).

    The message names the problem (empty file, not a PDF, truncated, encrypted, no NG12
    structure); the CLI prints it and exits with status 2 without writing anything.
    """
