"""The chat workflow as a LangGraph StateGraph.

    load_history -> build_query -> retrieve -> generate -> save_history -> END
         (any failing step) -> handle_error -> END

Walking skeleton: the query is the message as typed; `generate` quotes the retrieved passages
(extractive, nothing added). Later issues add guardrails and topic tracking, contextual query
rewriting in `build_query` and a grounded LLM answer in `generate`, on the same nodes.
"""

from __future__ import annotations

from typing import Any, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from chat.answer import compose_answer
from chat.history import HistoryStore, HistoryUnavailable, now_rfc3339
from ng12_common.citations import guideline_ref, hits_to_citations
from ng12_common.logs import get_logger
from ng12_common.models import (
    ChatQuery,
    ChatRequest,
    ChatResponse,
    ChatTurn,
    Citation,
    Grounding,
    GuidelineRef,
)
from ng12_common.retrieval_client import RetrievalClient, RetrievalError

log = get_logger("chat.graph")


class ChatState(TypedDict, total=False):
    request: ChatRequest
    asked_at: str
    history: list[ChatTurn]
    query: ChatQuery
    citations: list[Citation]
    guideline: GuidelineRef
    answer: str
    grounding: Grounding
    error: Exception | None


def _on_error(next_node: str) -> Any:
    def decide(state: ChatState) -> str:
        return "handle_error" if state.get("error") else next_node

    return decide


def build_graph(history: HistoryStore, retrieval: RetrievalClient) -> CompiledStateGraph[Any, Any, Any, Any]:
    async def load_history(state: ChatState) -> dict[str, Any]:
        try:
            return {"history": await history.get(state["request"].session_id)}
        except HistoryUnavailable as exc:
            return {"error": exc}

    async def build_query(state: ChatState) -> dict[str, Any]:
        return {"query": ChatQuery(strategy="direct", text=state["request"].message.strip())}

    async def retrieve(state: ChatState) -> dict[str, Any]:
        try:
            found = await retrieval.search(state["query"].text, top_k=state["request"].top_k, mode="chat")
        except RetrievalError as exc:
            return {"error": exc}
        return {
            "citations": hits_to_citations(found.hits),
            "guideline": guideline_ref(found.guideline, found.index_version),
        }

    async def generate(state: ChatState) -> dict[str, Any]:
        answer, grounding = compose_answer(state["citations"])
        return {"answer": answer, "grounding": grounding}

    async def save_history(state: ChatState) -> dict[str, Any]:
        request = state["request"]
        user = ChatTurn(role="user", content=request.message, at=state["asked_at"])
        assistant = ChatTurn(
            role="assistant",
            content=state["answer"],
            citations=state["citations"],
            grounding=state["grounding"],
            at=now_rfc3339(),
        )
        try:
            await history.append_pair(request.session_id, user, assistant)
        except HistoryUnavailable as exc:
            return {"error": exc}
        return {}

    async def handle_error(state: ChatState) -> dict[str, Any]:
        error = state.get("error")
        log.warning("chat_failed", error_type=type(error).__name__, error=str(error))
        return {}

    graph = StateGraph(ChatState)
    for name, node in (
        ("load_history", load_history),
        ("build_query", build_query),
        ("retrieve", retrieve),
        ("generate", generate),
        ("save_history", save_history),
        ("handle_error", handle_error),
    ):
        graph.add_node(name, node)
    graph.add_edge(START, "load_history")
    graph.add_conditional_edges("load_history", _on_error("build_query"), ["build_query", "handle_error"])
    graph.add_edge("build_query", "retrieve")
    graph.add_conditional_edges("retrieve", _on_error("generate"), ["generate", "handle_error"])
    graph.add_edge("generate", "save_history")
    graph.add_conditional_edges("save_history", _on_error(END), [END, "handle_error"])
    graph.add_edge("handle_error", END)
    return graph.compile()


class ChatRunner:
    """Runs the graph for one message and turns its final state into a response (or raises)."""

    def __init__(self, history: HistoryStore, retrieval: RetrievalClient) -> None:
        self._graph = build_graph(history, retrieval)

    async def run(self, request: ChatRequest) -> ChatResponse:
        final: dict[str, Any] = await self._graph.ainvoke({"request": request, "asked_at": now_rfc3339()})
        error = final.get("error")
        if error is not None:
            raise error
        return ChatResponse(
            session_id=request.session_id,
            answer=final["answer"],
            grounding=final["grounding"],
            citations=final["citations"],
            query=final["query"],
            guideline=final["guideline"],
        )
