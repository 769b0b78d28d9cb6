"""Lexical (BM25) index over the same search chunks as the dense index, persisted beside it.

bm25s does the scoring; tokenising is ours so that indexing and querying always agree:
lower-case word tokens (hyphenated words kept whole and split), English stop words removed,
a light plural fold ("symptoms" -> "symptom").
"""

from __future__ import annotations

import re
from pathlib import Path

import bm25s
import numpy as np

_WORD = re.compile(r"[a-z0-9]+(?:[-'][a-z0-9]+)*")
STOPWORDS = frozenset(
    """a an and are as at be by for from has have if in into is it its of on or that the their them
    they this to was were will with who what which when where how do does should can i me my we our you
    your he she his her about any all""".split()
)


def _fold(token: str) -> str:
    if len(token) > 4 and token.endswith("ies"):
        return token[:-3] + "y"
    if len(token) > 4 and token.endswith("s") and not token.endswith(("ss", "us", "is")):
        return token[:-1]
    return token


def tokenize(text: str) -> list[str]:
    out: list[str] = []
    for raw in _WORD.findall(text.lower()):
        parts = [raw, *raw.split("-")] if "-" in raw else [raw]
        out.extend(_fold(p) for p in parts if p and p not in STOPWORDS)
    return out


class LexicalIndex:
    def __init__(self, retriever: bm25s.BM25, size: int) -> None:
        self._retriever = retriever
        self.size = size

    @classmethod
    def build(cls, texts: list[str]) -> LexicalIndex:
        retriever = bm25s.BM25()
        retriever.index([tokenize(t) or ["_empty_"] for t in texts], show_progress=False)
        return cls(retriever, len(texts))

    def save(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self._retriever.save(str(folder))
        (folder / "size.txt").write_text(str(self.size), encoding="utf-8")

    @classmethod
    def load(cls, folder: Path) -> LexicalIndex:
        size = int((folder / "size.txt").read_text(encoding="utf-8"))
        return cls(bm25s.BM25.load(str(folder)), size)

    def search(self, query: str, k: int) -> list[tuple[int, float]]:
        """(row, score) pairs with a positive score, best first."""
        tokens = tokenize(query)
        if not tokens or self.size == 0:
            return []
        k = min(k, self.size)
        docs, scores = self._retriever.retrieve([tokens], k=k, show_progress=False)
        rows = np.asarray(docs)[0]
        vals = np.asarray(scores)[0]
        return [(int(r), float(s)) for r, s in zip(rows, vals, strict=True) if s > 0]
