"""RETRIEVAL_ADDR as a gRPC target: one address, a DNS name, or several replicas."""

from __future__ import annotations

import json

import pytest

from ng12_common.grpc_utils import channel_options, grpc_target


@pytest.mark.parametrize(
    ("addr", "target"),
    [
        ("127.0.0.1:50051", "127.0.0.1:50051"),
        ("retrieval:50051", "retrieval:50051"),  # a DNS name resolving to every replica
        ("dns:///retrieval-pool:50051", "dns:///retrieval-pool:50051"),
        ("127.0.0.1:50051,127.0.0.1:50052", "ipv4:127.0.0.1:50051,127.0.0.1:50052"),
        (" localhost:1 , 10.0.0.2:2 ", "ipv4:127.0.0.1:1,10.0.0.2:2"),
        ("[::1]:1,[::1]:2", "ipv6:[::1]:1,[::1]:2"),
    ],
)
def test_targets(addr: str, target: str) -> None:
    assert grpc_target(addr) == target


@pytest.mark.parametrize(
    "addr", ["retrieval-a:1,retrieval-b:2", "127.0.0.1,127.0.0.2:1", "127.0.0.1:1,[::1]:2"]
)
def test_unusable_lists_are_refused_with_a_reason(addr: str) -> None:
    with pytest.raises(ValueError, match=r"IP addresses|host:port|mix"):
        grpc_target(addr)


def test_reads_are_balanced_and_retried_writes_are_not() -> None:
    options = dict(channel_options())
    config = json.loads(options["grpc.service_config"])
    assert config["loadBalancingConfig"] == [{"round_robin": {}}]
    (method,) = config["methodConfig"]
    names = {n["method"] for n in method["name"]}
    assert "Search" in names and "ActivateIndex" not in names and "UploadChunks" not in names
    assert method["retryPolicy"]["retryableStatusCodes"] == ["UNAVAILABLE"]
    pinned = json.loads(dict(channel_options("pick_first"))["grpc.service_config"])
    assert pinned["loadBalancingConfig"] == [{"pick_first": {}}]
