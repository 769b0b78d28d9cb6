"""The per-request shortcuts of the gateway keep the behaviour of the long way round:
- audit records written in group commits (`AuditWriter`) form the same verifiable chain, each
  caller gets its own record, and one record's failure refuses only its own caller;
- a verified access token is remembered only while PyJWT would accept it again."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import jwt
import pytest

from gateway.audit.recorder import AuditWriter
from gateway.audit.records import AuditEntry, AuditRecord
from gateway.audit.store import AuditStore
from gateway.database import make_engine
from gateway.security.principal import Role
from gateway.security.tokens import TokenIssuer


def _entry(i: int, route: str = "/api/v1/assess") -> AuditEntry:
    return AuditEntry(
        request_id=f"r{i}", actor=f"local:u{i}", kind="assessment", method="POST", route=route, status=200
    )


def test_concurrent_records_are_one_chain_in_group_commits(tmp_path: Path) -> None:
    store = AuditStore(make_engine(f"sqlite:///{tmp_path / 'audit.sqlite3'}"))
    writer = AuditWriter(store)
    batches: list[int] = []
    append_batch = store.append_batch

    def counting(entries: list[AuditEntry]) -> list[AuditRecord]:
        batches.append(len(entries))
        return append_batch(entries)

    store.append_batch = counting  # type: ignore[method-assign]

    async def main() -> list[AuditRecord]:
        return await asyncio.gather(*(writer.append(_entry(i)) for i in range(40)))

    records = asyncio.run(main())
    assert [r.request_id for r in records] == [f"r{i}" for i in range(40)]  # each caller, its own record
    assert sorted(r.seq for r in records) == list(range(1, 41))
    assert sum(batches) == 40 and len(batches) < 40  # several records per transaction
    result = store.verify()
    assert result.ok and result.checked == 40, result.problem
    stored = {r.seq: r for r in store.query()}
    assert all(stored[r.seq].hash == r.hash for r in records)


def test_one_failing_record_refuses_only_its_caller(tmp_path: Path) -> None:
    store = AuditStore(make_engine(f"sqlite:///{tmp_path / 'audit.sqlite3'}"))
    writer = AuditWriter(store)
    append = store.append

    def refusing(entry: AuditEntry, within: object = None) -> AuditRecord:
        if entry.route == "/refused":
            raise RuntimeError("refused")
        return append(entry)

    store.append = refusing  # type: ignore[method-assign,assignment]
    store.append_batch = lambda entries: (_ for _ in ()).throw(RuntimeError("batch"))  # type: ignore[method-assign]

    async def main() -> list[AuditRecord | BaseException]:
        calls = [writer.append(_entry(i, "/refused" if i == 3 else "/api/v1/assess")) for i in range(8)]
        return await asyncio.gather(*calls, return_exceptions=True)

    outcomes = asyncio.run(main())
    assert isinstance(outcomes[3], RuntimeError)
    assert all(isinstance(o, AuditRecord) for i, o in enumerate(outcomes) if i != 3)
    assert store.verify().ok


def test_a_remembered_token_still_expires() -> None:
    issuer = TokenIssuer("k" * 48, ttl_seconds=2)
    token = issuer.issue("gp", [Role.CLINICIAN], now=time.time() - 1)
    first = issuer.verify(token)
    assert issuer.verify(token) is first and issuer.is_ours(token)  # remembered
    time.sleep(1.2)
    with pytest.raises(jwt.ExpiredSignatureError):
        issuer.verify(token)


def test_a_token_of_another_key_is_not_remembered_as_valid() -> None:
    issuer = TokenIssuer("k" * 48, ttl_seconds=60)
    other = TokenIssuer("o" * 48, ttl_seconds=60).issue("gp", [Role.CLINICIAN])
    for _ in range(2):
        with pytest.raises(jwt.InvalidSignatureError):
            issuer.verify(other)
    future = issuer.issue("gp", [Role.CLINICIAN], now=time.time() + 30)  # not valid yet
    for _ in range(2):
        with pytest.raises(jwt.ImmatureSignatureError):
            issuer.verify(future)
