"""The Flower envelope: a message's bytes ride in one Array as they are, and nothing else is accepted."""

import ast
import threading

import numpy as np
import pytest

pytest.importorskip("flwr", reason="the Flower extra is not installed")

from flwr.app import Array, ArrayRecord, ConfigRecord, RecordDict  # noqa: E402

from dpmoments.multisite.flower import pack, unpack  # noqa: E402


@pytest.mark.parametrize("data", [b"", b"\x00", bytes(range(256)) * 4097])
def test_bytes_round_trip_unchanged(data):
    assert unpack(pack(data)) == data


def test_no_python_parsing_on_the_way(monkeypatch):
    """A ``.npy`` envelope parsed its header with ``ast.literal_eval``, which CPython 3.11 can fail at random
    while other threads parse too (python/cpython#106905): one healthy site then looked crashed."""
    def forbidden(*args, **kwargs):
        raise AssertionError("ast parsed on the message path")

    monkeypatch.setattr(ast, "literal_eval", forbidden)
    results, data = [], [bytes([k]) * (1000 + k) for k in range(8)]

    def trip(b):
        results.append(unpack(pack(b)) == b)

    threads = [threading.Thread(target=trip, args=(b,)) for b in data * 25]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 200 and all(results)


@pytest.mark.parametrize("content", [
    RecordDict({"m": ArrayRecord({"b": Array(np.frombuffer(b"abc", dtype=np.uint8))})}),  # a .npy envelope
    RecordDict({"m": ArrayRecord({"b": Array("float32", (3,), "dpmoments.bytes", b"abc")})}),
    RecordDict({"m": ArrayRecord({"b": Array("uint8", (4,), "dpmoments.bytes", b"abc")})}),
    RecordDict({"m": ConfigRecord({"b": b"abc"})}),
    RecordDict({}),
])
def test_anything_else_is_not_a_message(content):
    with pytest.raises(ValueError, match="^not a dpmoments message$"):
        unpack(content)


def test_a_large_message_survives_flowers_chunking():
    """Flower sends an Array as 5 MB chunks and rebuilds it (deflate/inflate): the bytes come back whole."""
    data = np.random.default_rng(0).bytes(12 << 20)
    array = pack(data)["m"]["b"]
    assert len(array.children) > 1
    chunks = {cid: type(ch).inflate(ch.deflate()) for cid, ch in array.children.items()}
    rebuilt = Array.inflate(array.deflate(), children=chunks)
    assert unpack(RecordDict({"m": ArrayRecord({"b": rebuilt})})) == data
