"""Writing audit records from the routes: who, what route, a redacted summary, what was answered.

`outcome_of` reads the clinical outcome back from the JSON the gateway is about to return (the
recommendation ids, top action, grounding and index version), so the record says what the user
was shown. The write happens before the response is sent: if the trail cannot be written the
caller gets 503 and nothing unaudited is answered.

Calls that change something are recorded BEFORE the change takes effect (`AuditRecorder.first`),
or in the change's own transaction when it is in the gateway database (`write(..., within=)`):
if the record cannot be written, nothing is done and the caller gets 503. If the change then
fails, a second record with the same request id says so (its status, `outcome` `not_done` or
`unknown`, and `supersedes`: the first record's seq). Reads are recorded with the status they
are answered with (`AuditRecorder.read`), failures included.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from typing import Any

import orjson
from fastapi import Request

from gateway.audit.records import AuditEntry, AuditKind, AuditRecord, body_hash
from gateway.audit.store import ActionRefused, AuditStore, Within
from gateway.failures import failure_code, failure_outcome, failure_status
from gateway.security.principal import Principal
from ng12_common.http_app import route_template
from ng12_common.logs import current_request_id, get_logger

log = get_logger("gateway.audit")


def outcome_of(body: bytes) -> dict[str, Any]:
    """recommendation_ids, top_action, grounding, index_version from an assessment, chat or search reply."""
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError:
        return {}
    if not isinstance(data, dict):
        return {}
    out: dict[str, Any] = {}
    ids: list[str] = []
    assessment = data.get("assessment")
    if isinstance(assessment, dict):
        out["top_action"] = str(assessment.get("top_action", ""))
        ids = [
            str(m.get("recommendation_id"))
            for m in assessment.get("matched_recommendations", [])
            if isinstance(m, dict)
        ]
    if "grounding" in data:
        out["grounding"] = str(data.get("grounding", ""))
    for key in ("citations", "passages"):
        for item in data.get(key) or []:
            if isinstance(item, dict) and item.get("recommendation_id"):
                rid = str(item["recommendation_id"])
                if rid not in ids:
                    ids.append(rid)
    out["recommendation_ids"] = ids[:100]
    guideline = data.get("guideline")
    version = guideline.get("index_version") if isinstance(guideline, dict) else data.get("index_version")
    out["index_version"] = str(version or "")
    return out


def client_ip(request: Request, trusted_hops: int) -> str:
    forwarded = request.headers.get("x-forwarded-for", "")
    if trusted_hops and forwarded:
        hops = [h.strip() for h in forwarded.split(",") if h.strip()]
        if len(hops) >= trusted_hops:
            return hops[-trusted_hops][:64]
    return request.client.host if request.client else ""


class AuditUnavailable(Exception):
    """The audit record could not be written: the caller gets 503, never an unaudited answer."""


class AuditWriter:
    """Appends audit records from the event loop on ONE thread of its own, in group commits.

    Records asked for while a write is in progress are appended together in the next transaction
    (`AuditStore.append_batch`: consecutive seqs, committed together), and each caller resumes once
    its own record is committed, as with one transaction per record. One writing thread per process
    means the process's writes never wait for each other's database lock (SQLite's busy handler
    sleeps 1 to 100 ms when two connections want to write), and a batch costs one transaction, not
    one per record. If a batch of several fails for anything but contention, each of its records
    is tried alone, so one record's failure never refuses another's answer. A change made in the
    record's transaction (`within`) is always written alone."""

    def __init__(self, store: AuditStore) -> None:
        self.store = store
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="audit-writer")
        # records waiting for the next batch, per event loop (tests run several loops in turn);
        # a loop has an entry while its flushing task runs
        self._tasks: set[asyncio.Task[None]] = set()
        self._queues: dict[
            asyncio.AbstractEventLoop, list[tuple[AuditEntry, asyncio.Future[AuditRecord]]]
        ] = {}

    async def append(self, entry: AuditEntry, within: Within | None = None) -> AuditRecord:
        loop = asyncio.get_running_loop()
        if within is not None:
            return await loop.run_in_executor(self._executor, self.store.append, entry, within)
        done: asyncio.Future[AuditRecord] = loop.create_future()
        queue = self._queues.get(loop)
        if queue is None:
            queue = self._queues[loop] = []
            task = loop.create_task(self._flush(loop, queue))
            self._tasks.add(task)  # a reference until it is done
            task.add_done_callback(self._tasks.discard)
        queue.append((entry, done))
        return await done

    async def _flush(
        self, loop: asyncio.AbstractEventLoop, queue: list[tuple[AuditEntry, asyncio.Future[AuditRecord]]]
    ) -> None:
        try:
            while queue:
                batch = queue[:]
                del queue[:]
                try:
                    records = await loop.run_in_executor(self._executor, self._write, [e for e, _ in batch])
                except BaseException as exc:  # cancelled with the loop: leave no caller waiting
                    for _, done in batch:
                        if not done.done():
                            done.set_exception(exc)
                    raise
                for (_, done), outcome in zip(batch, records, strict=True):
                    if done.done():
                        continue
                    if isinstance(outcome, BaseException):
                        done.set_exception(outcome)
                    else:
                        done.set_result(outcome)
        finally:
            if self._queues.get(loop) is queue:
                del self._queues[loop]

    def _write(self, entries: list[AuditEntry]) -> list[AuditRecord | BaseException]:
        """On the writer thread: the batch in one transaction; failing that, each record alone."""
        if len(entries) > 1:
            try:
                return list(self.store.append_batch(entries))
            except Exception as exc:  # noqa: BLE001 - retried one by one below: each caller gets its own outcome
                log.info("audit_batch_written_one_by_one", records=len(entries), error=type(exc).__name__)
        out: list[AuditRecord | BaseException] = []
        for entry in entries:
            try:
                out.append(self.store.append(entry))
            except Exception as exc:  # noqa: BLE001 - handed to that record's caller
                out.append(exc)
        return out


class AuditRecorder:
    def __init__(self, store: AuditStore, trusted_hops: int = 0) -> None:
        self.store = store
        self.trusted_hops = trusted_hops
        self.writer = AuditWriter(store)

    async def write(
        self,
        request: Request,
        kind: AuditKind,
        status: int,
        *,
        principal: Principal | None = None,
        actor: str = "",
        raw_input: bytes = b"",
        summary: dict[str, Any] | None = None,
        reply: bytes = b"",
        within: Within | None = None,
    ) -> AuditRecord:
        """Append the record; `within(conn)` runs a change in the record's transaction (both or
        neither; an `ActionRefused` from it reaches the caller, nothing written)."""
        who = principal or getattr(request.state, "principal", None)
        entry = AuditEntry(
            request_id=current_request_id() or "",
            actor=who.subject if who else (actor or "anonymous"),
            role=who.role if who else "",
            auth_method=who.method if who else "",
            client_ip=client_ip(request, self.trusted_hops),
            kind=kind,
            method=request.method,
            route=route_template(request.scope),
            status=status,
            input_sha256=body_hash(raw_input) if raw_input else "",
            summary=summary or {},
            **(outcome_of(reply) if reply and status < 400 else {}),
        )
        try:
            return await self.writer.append(entry, within)
        except ActionRefused:
            raise
        except Exception as exc:  # noqa: BLE001 - any storage failure: refuse to answer, say why
            log.error("audit_write_failed", kind=kind, route=entry.route, error=type(exc).__name__)
            raise AuditUnavailable(
                f"The audit trail cannot be written ({type(exc).__name__}), so no answer is given; "
                "try again shortly, and tell your administrator if it persists."
            ) from None

    @asynccontextmanager
    async def first(
        self, request: Request, kind: AuditKind, status: int, summary: dict[str, Any]
    ) -> AsyncIterator[AuditRecord]:
        """Record an action with the status it answers when it succeeds, then run it (the body of
        the `async with`). No record, no action: AuditUnavailable (503) before anything is done.
        If the action fails, a second record (same request id) gives the status it is answered
        with, whether it may have taken effect (`outcome`) and the first record's seq."""
        record = await self.write(request, kind, status, summary=summary)
        try:
            yield record
        except Exception as exc:
            await self.write(
                request,
                kind,
                failure_status(exc),
                summary={
                    **summary,
                    "outcome": failure_outcome(exc),
                    "error": failure_code(exc),
                    "supersedes": record.seq,
                },
            )
            raise

    @asynccontextmanager
    async def on_failure(
        self, request: Request, kind: AuditKind, summary: dict[str, Any]
    ) -> AsyncIterator[dict[str, Any]]:
        """If the body fails, record the status its error is answered with (`outcome` not_done:
        use it around checks made before an action). The body may add facts to the summary."""
        facts = dict(summary)
        try:
            yield facts
        except Exception as exc:
            failed = {**facts, "error": failure_code(exc), "outcome": "not_done"}
            await self.write(request, kind, failure_status(exc), summary=failed)
            raise

    @asynccontextmanager
    async def read(
        self, request: Request, kind: AuditKind, summary: dict[str, Any]
    ) -> AsyncIterator[dict[str, Any]]:
        """Record a read once it is answered: 200, or the status its error is answered with. The
        body may add facts (counts, never free text) to the yielded summary."""
        async with self.on_failure(request, kind, summary) as facts:
            yield facts
        await self.write(request, kind, 200, summary=facts)
