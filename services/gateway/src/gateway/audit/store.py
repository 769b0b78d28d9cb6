"""Append, query, verify and purge the hash-chained audit trail (PostgreSQL or SQLite).

Appending reads the last record and inserts `seq + 1` with `prev_hash` = its hash, in one
transaction; `seq` is the primary key, so two writers racing for the same position (several
gateway workers or replicas) cannot fork the chain: one insert fails and is retried on the new
tail. Records are never updated (a trigger refuses UPDATE). `append(entry, within=...)` runs a
change to the same database (an API key created or revoked) in the record's own transaction, so
the change and its record are committed together or not at all. Retention (`purge`) deletes the oldest
records and moves the anchor (the last deleted record's seq and hash) so the rest still verifies.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from sqlalchemy import Connection, Engine, delete, func, insert, select
from sqlalchemy.exc import IntegrityError, OperationalError

from gateway.audit.records import GENESIS, AuditEntry, AuditRecord, canonical, record_hash, text_hash
from gateway.database import audit_anchor, audit_log

_TAIL = select(audit_log.c.seq, audit_log.c.hash).order_by(audit_log.c.seq.desc()).limit(1)
_ANCHOR = select(audit_anchor.c.seq, audit_anchor.c.hash)
_INSERT = insert(audit_log)


@dataclass(frozen=True)
class VerifyResult:
    ok: bool
    checked: int
    head_seq: int
    head_hash: str
    problem: str = ""


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds")


# PostgreSQL: unique violation (another writer inserted this seq), serialization failure,
# deadlock, lock not available
_CONTENTION_SQLSTATES = frozenset({"23505", "40001", "40P01", "55P03"})


def contention(exc: IntegrityError | OperationalError) -> bool:
    """True for an error that another writer caused and a retry on the new tail resolves: two
    appends racing for one seq, a lock (SQLite "database is locked"), a serialization failure or
    deadlock. False for the rest: a database that cannot be reached, a missing table."""
    sqlstate = getattr(exc.orig, "sqlstate", None)
    if sqlstate is not None:
        return sqlstate in _CONTENTION_SQLSTATES
    if isinstance(exc, IntegrityError):
        return True  # SQLite: the seq primary key (or the hash) taken by another writer
    message = str(exc.orig).lower()
    return "database is locked" in message or "database table is locked" in message


class ActionRefused(Exception):
    """Raised by an `append(..., within=...)` change that must not happen (e.g. no such API key):
    the transaction, record included, is rolled back and the exception reaches the caller."""


Within = Callable[[Connection], None]


class AuditStore:
    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    def append(self, entry: AuditEntry, within: Within | None = None) -> AuditRecord:
        """Blocking: run in a thread. Retries contention (another writer took the position, a
        lock); raises at once on anything else (the database is down) and after repeated
        conflicts, and the caller answers 503. `within(conn)` runs in the record's transaction,
        after the insert (see the module doc)."""
        return self._retrying(lambda: self._append_all([entry], within))[0]

    def append_batch(self, entries: list[AuditEntry]) -> list[AuditRecord]:
        """Append `entries` in order in ONE transaction (consecutive seqs, each linked to the one
        before): all are committed or none. Blocking; contention is retried as in `append`."""
        return self._retrying(lambda: self._append_all(entries, None))

    @staticmethod
    def _retrying(write: Callable[[], list[AuditRecord]]) -> list[AuditRecord]:
        for attempt in range(50):
            try:
                return write()
            except (IntegrityError, OperationalError) as exc:
                if not contention(exc):
                    raise
                time.sleep(min(0.002 * (attempt + 1), 0.05))
        raise RuntimeError("the audit trail is busy; the record was not written")

    def _append_all(self, entries: list[AuditEntry], within: Within | None) -> list[AuditRecord]:
        with self._engine.begin() as conn:
            tail = conn.execute(_TAIL).first()
            if tail is None:
                anchor = conn.execute(_ANCHOR).first()
                seq, prev = (anchor[0] + 1, anchor[1]) if anchor else (1, GENESIS)
            else:
                seq, prev = tail[0] + 1, tail[1]
            records, rows = [], []
            for entry in entries:
                record = AuditRecord(**entry.model_dump(), seq=seq, ts=_now(), prev_hash=prev)
                text = canonical(record)  # what is hashed and stored (computed once)
                record.hash = text_hash(text)
                records.append(record)
                rows.append(
                    {
                        "seq": record.seq,
                        "ts": record.ts,
                        "request_id": record.request_id,
                        "actor": record.actor,
                        "role": record.role,
                        "kind": record.kind,
                        "method": record.method,
                        "route": record.route,
                        "status": record.status,
                        "record": text,
                        "prev_hash": record.prev_hash,
                        "hash": record.hash,
                    }
                )
                seq, prev = seq + 1, record.hash
            conn.execute(_INSERT, rows)
            if within is not None:
                within(conn)
        return records

    def query(
        self, since: str | None = None, user: str | None = None, kind: str | None = None, limit: int = 1000
    ) -> list[AuditRecord]:
        """Oldest first. With `since`: the first `limit` records from then on (page forward with the
        last one's ts); without: the latest `limit` records, so a plain read shows recent activity."""
        order = audit_log.c.seq if since else audit_log.c.seq.desc()
        stmt = select(audit_log.c.record, audit_log.c.hash).order_by(order).limit(limit)
        if since:
            stmt = stmt.where(audit_log.c.ts >= since)
        if user:
            stmt = stmt.where(audit_log.c.actor == user)
        if kind:
            stmt = stmt.where(audit_log.c.kind == kind)
        with self._engine.connect() as conn:
            rows = list(conn.execute(stmt).all())
        if not since:
            rows.reverse()
        return [AuditRecord(**json.loads(r[0]), hash=r[1]) for r in rows]

    def first_seq_since(self, since: str) -> int | None:
        """The lowest seq of the records at or after `since` (ISO time; the indexed `ts`), or None."""
        with self._engine.connect() as conn:
            first = conn.execute(select(func.min(audit_log.c.seq)).where(audit_log.c.ts >= since)).scalar()
        return int(first) if first is not None else None

    def iter_all(self, batch: int = 1000, since: str | None = None) -> Iterator[tuple[int, str, str, str]]:
        """(seq, record json, prev_hash, hash) in order, in batches (export and verify). With `since`
        (ISO date or time, UTC) it starts at the lowest seq stamped from then on, found with the `ts`
        index, instead of reading the whole trail from the start. `ts` grows with `seq` (both are
        taken in the appending transaction) up to clock skew between replicas, so callers still skip
        a later record stamped before `since`."""
        last = -1
        if since:
            first = self.first_seq_since(since)
            if first is None:
                return
            last = first - 1
        while True:
            with self._engine.connect() as conn:
                rows = conn.execute(
                    select(audit_log.c.seq, audit_log.c.record, audit_log.c.prev_hash, audit_log.c.hash)
                    .where(audit_log.c.seq > last)
                    .order_by(audit_log.c.seq)
                    .limit(batch)
                ).all()
            if not rows:
                return
            for row in rows:
                yield row[0], row[1], row[2], row[3]
            last = rows[-1][0]

    def verify(self, expect_head: tuple[int, str] | None = None) -> VerifyResult:
        """Walk the chain from the anchor: every record's hash recomputed, every link and seq checked."""
        with self._engine.connect() as conn:
            anchor = conn.execute(select(audit_anchor.c.seq, audit_anchor.c.hash)).first()
        expected_seq, expected_prev = (anchor[0] + 1, anchor[1]) if anchor else (1, GENESIS)
        checked = 0
        head_seq, head_hash = expected_seq - 1, expected_prev
        for seq, raw, prev_hash, stored_hash in self.iter_all():
            try:
                record = AuditRecord(**json.loads(raw), hash=stored_hash)
            except ValueError as exc:
                return VerifyResult(False, checked, head_seq, head_hash, f"record {seq} is unreadable: {exc}")
            if seq != expected_seq or record.seq != seq:
                return VerifyResult(
                    False,
                    checked,
                    head_seq,
                    head_hash,
                    f"record {expected_seq} is missing (found {seq} next)",
                )
            if prev_hash != expected_prev or record.prev_hash != expected_prev:
                return VerifyResult(
                    False, checked, head_seq, head_hash, f"record {seq} does not link to {seq - 1}"
                )
            if record_hash(record) != stored_hash:
                return VerifyResult(
                    False, checked, head_seq, head_hash, f"record {seq} was altered (hash mismatch)"
                )
            checked += 1
            head_seq, head_hash = seq, stored_hash
            expected_seq, expected_prev = seq + 1, stored_hash
        if expect_head is not None:
            seq, digest = expect_head
            if head_seq < seq:
                return VerifyResult(
                    False,
                    checked,
                    head_seq,
                    head_hash,
                    f"records after {head_seq} were deleted (expected head {seq})",
                )
            found = self.query_seq(seq)
            if found is None or found.hash != digest:
                return VerifyResult(
                    False, checked, head_seq, head_hash, f"record {seq} is not the expected head"
                )
        return VerifyResult(True, checked, head_seq, head_hash)

    def query_seq(self, seq: int) -> AuditRecord | None:
        with self._engine.connect() as conn:
            row = conn.execute(
                select(audit_log.c.record, audit_log.c.hash).where(audit_log.c.seq == seq)
            ).first()
        return AuditRecord(**json.loads(row[0]), hash=row[1]) if row else None

    def purge(self, retention_days: int, now: datetime | None = None) -> int:
        """Delete records older than the retention period; the chain stays verifiable."""
        cutoff = ((now or datetime.now(UTC)) - timedelta(days=retention_days)).isoformat(
            timespec="microseconds"
        )
        with self._engine.begin() as conn:
            last = conn.execute(
                select(audit_log.c.seq, audit_log.c.hash)
                .where(audit_log.c.ts < cutoff)
                .order_by(audit_log.c.seq.desc())
                .limit(1)
            ).first()
            if last is None:
                return 0
            conn.execute(delete(audit_anchor))
            conn.execute(insert(audit_anchor).values(id=1, seq=last[0], hash=last[1]))
            removed = conn.execute(delete(audit_log).where(audit_log.c.seq <= last[0])).rowcount
        return int(removed)
