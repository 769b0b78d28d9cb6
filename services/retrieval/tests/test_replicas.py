"""Retrieval replicas on real processes: a real Chroma server (`chroma run`), one writer and two
replicas sharing an index directory, Redis pub/sub announcing activations, and a client whose
channel spans both replicas (round_robin, retries on UNAVAILABLE).

Under a steady load of searches through that client: activating a version and rolling it back
reach both replicas within seconds (the replicas' registry timer is set to 60 s, so only the
announcement can make it that fast), every answer comes whole from the version it names (never a
half-loaded one), and SIGKILL of one replica costs no failed call. A replica started later reads
the registry and serves the active version; a replica refuses index changes.
"""

from __future__ import annotations

import asyncio
import signal
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import grpc
import pytest

from ingestion.index_upload import upload_index
from ng12.retrieval.v1 import retrieval_pb2 as pb
from ng12.retrieval.v1 import retrieval_pb2_grpc as pb_grpc
from ng12_common.knowledge import KnowledgeBase
from ng12_common.retrieval_client import RetrievalClient, RetrievalError
from tests.support import kb_slice, start_chroma_server, start_retrieval, stop_process

QUERIES = ["haemoptysis", "lump in the breast", "rectal bleeding", "weight loss", "hoarseness", "fatigue"]
PROPAGATION_LIMIT_S = 5.0


@dataclass
class Cluster:
    tmp: Path
    env: dict[str, str]
    chroma: subprocess.Popen[bytes]
    writer: subprocess.Popen[bytes] | None = None
    writer_port: int = 0
    replicas: dict[str, tuple[subprocess.Popen[bytes], int]] = field(default_factory=dict)
    metrics: dict[str, int] = field(default_factory=dict)

    @property
    def writer_addr(self) -> str:
        return f"127.0.0.1:{self.writer_port}"

    def addr(self, name: str) -> str:
        return f"127.0.0.1:{self.replicas[name][1]}"

    @property
    def pool(self) -> str:
        return ",".join(self.addr(n) for n in sorted(self.replicas))

    def start_writer(self) -> None:
        proc, self.writer_port, _, _ = start_retrieval(
            self.tmp / "writer", extra_env={**self.env, "INDEX_ROLE": "writer"}
        )
        self.writer = proc  # type: ignore[assignment]

    def start_replica(self, name: str, port: int | None = None) -> None:
        proc, port, metrics_port, _ = start_retrieval(
            self.tmp / name, port, extra_env={**self.env, "INDEX_ROLE": "replica"}
        )
        self.replicas[name] = (proc, port)  # type: ignore[assignment]
        self.metrics[name] = metrics_port

    def searches_served(self, name: str) -> float:
        """Search calls answered OK by one replica (its Prometheus counter)."""
        import urllib.request

        with urllib.request.urlopen(f"http://127.0.0.1:{self.metrics[name]}/metrics", timeout=5) as r:
            text = r.read().decode()
        return sum(
            float(line.rsplit(" ", 1)[1])
            for line in text.splitlines()
            if line.startswith("ng12_grpc_server_requests_total{")
            and 'method="Search"' in line
            and 'code="OK"' in line
        )


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory, redis_url: str) -> Iterator[Cluster]:
    tmp = tmp_path_factory.mktemp("replicas")
    chroma, chroma_port = start_chroma_server(tmp)
    env = {
        "CHROMA_DIR": str(tmp / "index"),  # the directory every retrieval process shares
        "CHROMA_HOST": "127.0.0.1",
        "CHROMA_PORT": str(chroma_port),
        "REDIS_URL": redis_url,
        "REGISTRY_POLL_SECONDS": "60",  # only the pub/sub announcement can make a switch fast
        "SEARCH_CACHE_SIZE": "0",  # every search is computed from the served index
    }
    c = Cluster(tmp, env, chroma)
    try:
        c.start_writer()
        c.start_replica("r1")
        c.start_replica("r2")
        yield c
    finally:
        for proc, _ in c.replicas.values():
            stop_process(proc)
        if c.writer is not None:
            stop_process(c.writer)
        stop_process(chroma)


def _served(addr: str) -> str:
    """The version a process answers a Search from ("" while it serves none)."""
    with grpc.insecure_channel(addr) as ch:
        try:
            r = pb_grpc.RetrievalStub(ch).Search(
                pb.SearchRequest(query="haemoptysis", top_k=3, mode=pb.SEARCH_MODE_CHAT), timeout=5
            )
        except grpc.RpcError as exc:
            if exc.code() == grpc.StatusCode.FAILED_PRECONDITION:  # type: ignore[attr-defined]
                return ""
            raise
    return r.index_version


def _wait_served(addrs: list[str], version: str, timeout: float = 30.0) -> float:
    """Seconds until every process in `addrs` answers from `version`."""
    start = time.monotonic()
    pending = set(addrs)
    while pending:
        pending = {a for a in pending if _served(a) != version}
        if not pending:
            break
        if time.monotonic() - start > timeout:
            raise AssertionError(f"{sorted(pending)} did not serve {version} within {timeout} s")
        time.sleep(0.05)
    return time.monotonic() - start


class Load:
    """Searches through one RetrievalClient over the replica pool, from 4 concurrent callers, in a
    thread of its own; counts failures and checks that each answer's hits all belong to the
    version the answer names."""

    def __init__(self, pool: str, writer: str, chunks_of: dict[str, set[str]]) -> None:
        self.pool, self.writer, self.chunks_of = pool, writer, chunks_of
        self.ok = 0
        self.failures: list[str] = []
        self.mixed: list[str] = []
        self.versions: Counter[str] = Counter()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=lambda: asyncio.run(self._run()), daemon=True)

    async def _caller(self, client: RetrievalClient, n: int) -> None:
        i = n
        while not self._stop.is_set():
            query = QUERIES[i % len(QUERIES)]
            i += 1
            try:
                r = await client.search(query, top_k=5, mode="chat")
            except RetrievalError as exc:
                self.failures.append(f"{type(exc).__name__}: {exc.message}")
                continue
            self.ok += 1
            self.versions[r.index_version] += 1
            known = self.chunks_of.get(r.index_version, set())
            stray = [h.chunk_id for h in r.hits if h.chunk_id not in known]
            if stray or not r.hits:
                self.mixed.append(f"{r.index_version}: {stray or 'no hits'}")

    async def _run(self) -> None:
        client = RetrievalClient(self.pool, timeout_seconds=5.0, writer_target=self.writer)
        try:
            await asyncio.gather(*(self._caller(client, n) for n in range(4)))
        finally:
            await client.close()

    def __enter__(self) -> Load:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(30)

    def wait_calls(self, n: int, timeout: float = 30.0) -> None:
        target = self.ok + n
        deadline = time.monotonic() + timeout
        while self.ok < target and time.monotonic() < deadline and not self.failures:
            time.sleep(0.02)


def test_replica_refuses_index_changes(cluster: Cluster) -> None:
    with grpc.insecure_channel(cluster.addr("r1")) as ch, pytest.raises(grpc.RpcError) as err:
        pb_grpc.RetrievalStub(ch).BeginIndex(pb.BeginIndexRequest(description="not here"), timeout=10)
    assert err.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "read-only replica" in err.value.details()


def test_activate_rollback_and_kill_a_replica_under_load(
    cluster: Cluster, real_kb: KnowledgeBase, capsys: pytest.CaptureFixture[str]
) -> None:
    kb1, kb2 = kb_slice(real_kb, 0, 20), kb_slice(real_kb, 20, 40)
    replicas = [cluster.addr("r1"), cluster.addr("r2")]

    v1 = upload_index(cluster.writer_addr, kb1)["version"]
    first = _wait_served(replicas, v1)
    v2 = upload_index(cluster.writer_addr, kb2, activate=False)["version"]
    chunks_of = {v1: {c.id for c in kb1.chunks}, v2: {c.id for c in kb2.chunks}}
    timings = {"first activation": first}

    async def admin(op: str) -> str:
        client = RetrievalClient(cluster.pool, writer_target=cluster.writer_addr)
        try:
            record = await (client.activate(v2) if op == "activate" else client.rollback())
            return record.version
        finally:
            await client.close()

    with Load(cluster.pool, cluster.writer_addr, chunks_of) as load:
        load.wait_calls(50)
        assert asyncio.run(admin("activate")) == v2  # through the writer address
        timings["activate"] = _wait_served(replicas, v2)
        load.wait_calls(50)
        assert asyncio.run(admin("rollback")) == v1
        timings["rollback"] = _wait_served(replicas, v1)
        load.wait_calls(50)

        # both replicas answer the pool's calls (round_robin)
        served_before = {n: cluster.searches_served(n) for n in ("r1", "r2")}

        # SIGKILL one replica mid-load: its calls in flight are retried on the other one
        before = load.ok
        proc, port = cluster.replicas["r1"]
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        load.wait_calls(200)
        after_kill = load.ok - before

        # started again (same port), it reads the registry and serves the active version
        started = time.monotonic()
        cluster.start_replica("r1", port)
        timings["replica restart to serving"] = time.monotonic() - started + _wait_served([replicas[0]], v1)
        load.wait_calls(50)

    with capsys.disabled():
        print(
            f"\nreplicas: {load.ok} searches, {len(load.failures)} failed, versions {dict(load.versions)}, "
            f"per replica before the kill {served_before}; "
            + ", ".join(f"{k} {v:.2f} s" for k, v in timings.items())
        )
    assert min(served_before.values()) > 100, served_before
    assert not load.failures, load.failures[:5]
    assert not load.mixed, load.mixed[:5]
    assert after_kill >= 200
    assert set(load.versions) == {v1, v2}
    for step in ("activate", "rollback"):
        assert timings[step] < PROPAGATION_LIMIT_S, timings


def test_without_redis_a_replica_follows_by_its_registry_timer(cluster: Cluster) -> None:
    """No announcement reaches this replica (no REDIS_URL): its REGISTRY_POLL_SECONDS re-check
    alone brings it to each new version."""
    proc, port, _, _ = start_retrieval(
        cluster.tmp / "r3",
        extra_env={**cluster.env, "INDEX_ROLE": "replica", "REDIS_URL": "", "REGISTRY_POLL_SECONDS": "0.5"},
    )
    try:
        addr = f"127.0.0.1:{port}"
        with grpc.insecure_channel(cluster.writer_addr) as ch:
            stub = pb_grpc.RetrievalStub(ch)
            active = stub.GetActiveIndex(pb.GetActiveIndexRequest(), timeout=10).version
            _wait_served([addr], active)
            back = stub.RollbackIndex(pb.RollbackIndexRequest(), timeout=30).version
            assert back != active
            assert _wait_served([addr], back, timeout=10) < 2.0
            assert stub.RollbackIndex(pb.RollbackIndexRequest(), timeout=30).version == active
            assert _wait_served([addr], active, timeout=10) < 2.0
    finally:
        stop_process(proc)  # type: ignore[arg-type]
