"""The long connection's pure parts: the pbbp2.Frame codec (known bytes, round trips, negative
int32, unknown fields skipped, malformed bytes refused), split payload reassembly, the ack
frame, ClientConfig updates and the reconnect schedule."""

from __future__ import annotations

import json

import pytest

from nekoflow.platforms.feishu.frame import DATA, Frame, FrameError, Reassembler, ping_frame
from nekoflow.platforms.feishu.longconn import ClientConfig, reconnect_delay

# SeqID=1 LogID=2 service=3 method=1 headers=[type: event] payload={} — written out by hand
# from the protobuf encoding rules (tag = field << 3 | wire type).
KNOWN = b"\x08\x01\x10\x02\x18\x03\x20\x01\x2a\x0d\x0a\x04type\x12\x05event\x42\x02{}"


def test_encodes_and_decodes_known_bytes() -> None:
    frame = Frame(seq_id=1, log_id=2, service=3, method=DATA, headers=[("type", "event")])
    frame.payload = b"{}"
    assert frame.encode() == KNOWN
    assert Frame.decode(KNOWN) == frame
    assert Frame.decode(KNOWN).header("type") == "event"
    assert Frame.decode(KNOWN).header("sum") is None


def test_round_trip_of_every_field() -> None:
    frame = Frame(
        seq_id=2**64 - 1,
        log_id=300,
        service=-5,
        method=1,
        headers=[("type", "event"), ("message_id", "m-1"), ("type", "again"), ("k", "喵")],
        payload_encoding="gzip",
        payload_type="json",
        payload=bytes(range(256)) * 40,
        log_id_new="log-9",
    )
    assert Frame.decode(frame.encode()) == frame
    empty = Frame()
    assert empty.encode() == b"\x08\x00\x10\x00\x18\x00\x20\x00"  # required fields written
    assert Frame.decode(empty.encode()) == empty
    assert Frame.decode(ping_frame(33).encode()).headers == [("type", "ping")]


def test_unknown_fields_are_skipped() -> None:
    extra = b"\x78\x05" + b"\x81\x01" + b"\x00" * 8 + b"\x85\x01" + b"\x00" * 4  # 15, 16, 16
    frame = Frame.decode(KNOWN + extra)
    assert frame.payload == b"{}" and frame.service == 3


@pytest.mark.parametrize(
    ("data", "words"),
    [
        (KNOWN[:-1], "truncated"),
        (b"\x08", "truncated varint"),
        (b"\x08\x01\x10\x02\x18\x03", "missing required"),
        (b"\x08\x01\x10\x02\x18\x03\x20\x01\x2a\x03\x0a\x01k", "key and value"),
        (b"\x08\x01\x10\x02\x18\x03\x20\x01\x3a\x02\xff\xfe", "not UTF-8"),
        (b"\x0b", "wire type"),
        (b"\x08" + b"\xff" * 11, "varint too long"),
        (b"\x0a\x00", "expected a number"),
    ],
)
def test_malformed_bytes_are_refused(data: bytes, words: str) -> None:
    with pytest.raises(FrameError, match=words):
        Frame.decode(data)


def test_ack_keeps_the_frame_and_answers_200() -> None:
    frame = Frame.decode(KNOWN)
    ack = frame.ack(200, started=0.0)
    assert json.loads(ack.payload or b"") == {"code": 200}
    assert ack.seq_id == 1 and ack.service == 3 and ack.method == DATA
    assert ack.header("type") == "event" and int(ack.header("biz_rt") or "-1") >= 0
    assert frame.header("biz_rt") is None  # the received frame is left alone


def test_reassembles_parts_in_any_order() -> None:
    parts = Reassembler()
    assert parts.add("m", 1, 0, b"whole") == b"whole"
    assert parts.add("", 1, 1, b"whole") == b"whole"  # not split: seq and id do not matter
    assert parts.add("m", 3, 2, b"c") is None
    assert parts.add("m", 3, 0, b"a") is None
    assert parts.add("other", 2, 1, b"y") is None
    assert len(parts) == 2
    assert parts.add("m", 3, 1, b"b") == b"abc"
    assert len(parts) == 1
    with pytest.raises(FrameError, match="seq"):
        parts.add("x", 2, 2, b"")
    with pytest.raises(FrameError, match="sum"):
        parts.add("x", 0, 0, b"")
    with pytest.raises(FrameError, match="message_id"):
        parts.add("", 2, 0, b"")
    with pytest.raises(FrameError, match="changed"):
        parts.add("other", 3, 0, b"")


def test_incomplete_parts_expire() -> None:
    parts = Reassembler(ttl=0.0)
    assert parts.add("m", 2, 0, b"a") is None
    assert parts.add("m", 2, 1, b"b") is None  # the first part is forgotten: not joined
    assert len(parts) == 1


def test_client_config_and_reconnect_schedule() -> None:
    config = ClientConfig()
    assert (config.reconnect_count, config.ping_interval) == (-1, 120.0)
    config.update(
        {"ReconnectCount": 3, "ReconnectInterval": 7, "ReconnectNonce": 10, "PingInterval": 5}
    )
    assert config == ClientConfig(3, 7.0, 10.0, 5.0)
    config.update({"PingInterval": -1, "ReconnectCount": "x", "ReconnectInterval": True})
    assert config == ClientConfig(3, 7.0, 10.0, 5.0)  # invalid values are ignored
    config.update(None)
    assert reconnect_delay(1, config, rand=lambda: 0.5) == 5.0  # jitter: half the nonce
    assert reconnect_delay(2, config, rand=lambda: 0.5) == 7.0
