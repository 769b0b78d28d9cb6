"""The gateway's own database: the audit trail and the integrators' API keys.

PostgreSQL in production (GATEWAY_DATABASE_URL=postgresql+psycopg://...), an SQLite file for
`make run`. SQLAlchemy Core with one schema for both; calls are blocking and run in a thread
(`asyncio.to_thread`). The audit table refuses UPDATE with a trigger on both engines (append-only;
see gateway.audit). Retention deletes only through `gateway.audit.store.AuditStore.purge`.
"""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import (
    DDL,
    JSON,
    BigInteger,
    Boolean,
    Column,
    Engine,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    create_engine,
    event,
    text,
)
from sqlalchemy.engine import make_url

metadata = MetaData()
CONNECT_TIMEOUT_SECONDS = 3  # PostgreSQL (libpq connect_timeout)

audit_log = Table(
    "audit_log",
    metadata,
    Column("seq", BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=False),
    Column("ts", String(40), nullable=False, index=True),
    Column("request_id", String(128), nullable=False),
    Column("actor", String(256), nullable=False, index=True),
    Column("role", String(32), nullable=False),
    Column("kind", String(32), nullable=False, index=True),
    Column("method", String(8), nullable=False),
    Column("route", String(200), nullable=False),
    Column("status", Integer, nullable=False),
    Column("record", Text, nullable=False),  # canonical JSON of the whole record (what is hashed)
    Column("prev_hash", String(64), nullable=False),
    Column("hash", String(64), nullable=False, unique=True),
)

audit_anchor = Table(  # where the chain starts after retention removed older records
    "audit_anchor",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("seq", BigInteger().with_variant(Integer, "sqlite"), nullable=False),
    Column("hash", String(64), nullable=False),
)

api_keys = Table(
    "api_keys",
    metadata,
    Column("key_id", String(32), primary_key=True),
    Column("name", String(200), nullable=False),
    Column("key_sha256", String(64), nullable=False, unique=True),
    Column("roles", JSON, nullable=False),
    Column("created_by", String(256), nullable=False),
    Column("created_at", String(40), nullable=False),
    Column("revoked_at", String(40), nullable=True),
    Column("revoked", Boolean, nullable=False, default=False),
)

_NO_UPDATE_SQLITE = DDL(
    "CREATE TRIGGER IF NOT EXISTS audit_log_no_update BEFORE UPDATE ON audit_log "
    "BEGIN SELECT RAISE(ABORT, 'audit_log is append-only'); END"
)
_NO_UPDATE_PG_FN = DDL(
    "CREATE OR REPLACE FUNCTION audit_log_refuse_update() RETURNS trigger AS $$ "
    "BEGIN RAISE EXCEPTION 'audit_log is append-only'; END $$ LANGUAGE plpgsql"
)
_NO_UPDATE_PG = DDL(
    "DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_trigger WHERE tgname = 'audit_log_no_update') THEN "
    "CREATE TRIGGER audit_log_no_update BEFORE UPDATE ON audit_log "
    "FOR EACH ROW EXECUTE FUNCTION audit_log_refuse_update(); END IF; END $$"
)


def make_engine(url: str) -> Engine:
    """An engine on `url`, with the schema created if missing (SQLite: parent folder too)."""
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        if parsed.database and parsed.database != ":memory:":
            Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(url, connect_args={"timeout": 30})

        @event.listens_for(engine, "connect")
        def _sqlite_connect(dbapi_connection, _record):  # type: ignore[no-untyped-def]
            dbapi_connection.isolation_level = None  # SQLAlchemy emits BEGIN below
            dbapi_connection.execute("PRAGMA journal_mode=WAL")
            # WAL + NORMAL: a commit survives a crash of any process (not a power cut before the
            # next checkpoint); the single-host `make run` store. Production uses PostgreSQL.
            dbapi_connection.execute("PRAGMA synchronous=NORMAL")

        @event.listens_for(engine, "begin")
        def _sqlite_begin(conn):  # type: ignore[no-untyped-def]
            conn.exec_driver_sql("BEGIN IMMEDIATE")  # one writer at a time across processes
    else:
        if parsed.drivername == "postgresql":
            parsed = parsed.set(drivername="postgresql+psycopg")
        # a database that does not answer fails a connection in CONNECT_TIMEOUT_SECONDS (503), not
        # after the operating system's TCP timeout (minutes)
        engine = create_engine(
            parsed,
            pool_pre_ping=True,
            pool_size=5,
            max_overflow=5,
            connect_args={"connect_timeout": CONNECT_TIMEOUT_SECONDS},
        )
    with engine.begin() as conn:
        if engine.dialect.name == "postgresql":
            conn.execute(text("SELECT pg_advisory_xact_lock(712001)"))  # concurrent first starts
        metadata.create_all(conn)
        if engine.dialect.name == "sqlite":
            conn.execute(_NO_UPDATE_SQLITE)
        else:
            conn.execute(_NO_UPDATE_PG_FN)
            conn.execute(_NO_UPDATE_PG)
    return engine
