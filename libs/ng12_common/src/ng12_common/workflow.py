"""LangGraph routing without conditional edges: a node that names its successor.

`routed(node, route)` wraps a node so that it returns `Command(update=..., goto=route(state))`,
where `state` is the node's input with its update applied. This replaces `add_conditional_edges`:
LangGraph runs each conditional-edge function as a traced runnable in a task of its own, which
cost ~0.07 ms per edge on this machine; a routed node pays nothing extra. Register the wrapped node
with `add_node(name, routed(...), destinations=...)` so the graph still knows (and draws) its edges.
langgraph is imported lazily: only the workflow services (assessment, chat) use this.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

Node = Callable[[Any], Awaitable[Mapping[str, Any]]]
Route = Callable[[Mapping[str, Any]], str]


def routed(node: Node, route: Route) -> Any:
    """The node, returning a Command to the successor `route` picks (typed Any: LangGraph's
    add_node overloads do not accept a plain coroutine function of a dict)."""
    from langgraph.types import Command

    async def run(state: Any) -> Any:
        update = dict(await node(state))
        return Command(update=update, goto=route({**state, **update}))

    run.__name__ = getattr(node, "__name__", "node")
    return run


def unless_error(next_node: str, error_node: str = "handle_error") -> Route:
    """The route of a node that goes on to `next_node`, or to `error_node` when it set `error`."""

    def decide(state: Mapping[str, Any]) -> str:
        return error_node if state.get("error") else next_node

    return decide
