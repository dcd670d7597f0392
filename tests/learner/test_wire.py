"""learner.wire: only wire values cross between the lab and the worker (plain tensors, scalars, lists, tuples,
dicts); a frame holding anything else is refused unread, never unpickled as code; a side that stops answering
is a timeout, a side that is gone is ChannelClosed; frames, depth and counts are capped."""

from __future__ import annotations

import contextlib
import io
import os
import pickle
import time

import pytest
import torch

from workshop.learner import wire
from workshop.learner.wire import Channel, ChannelClosed, ChannelTimeout, WireError

MARK = "wire-test-ran-code"


class Payload:
    """A pickle that runs code when it is loaded: what a hostile worker would send."""

    def __reduce__(self):
        return (exec, (f"import os; os.environ[{MARK!r}] = '1'",))


def hostile_frame() -> bytes:
    buffer = io.BytesIO()
    torch.save({"grad": Payload()}, buffer, pickle_module=pickle)
    return buffer.getvalue()


def unrestricted_loads(payload: bytes):
    """Planted: loads a frame with the full unpickler."""
    return torch.load(io.BytesIO(payload), weights_only=False)


def runs_code(loads, monkeypatch) -> bool:
    monkeypatch.delenv(MARK, raising=False)
    with contextlib.suppress(WireError):
        loads(hostile_frame())
    return os.environ.get(MARK) == "1"


def test_a_frame_holding_code_is_refused_unrun(monkeypatch):
    assert not runs_code(wire.loads, monkeypatch)
    with pytest.raises(WireError, match="not a wire value"):
        wire.loads(hostile_frame())


def test_the_check_catches_an_unrestricted_load(monkeypatch):
    assert runs_code(unrestricted_loads, monkeypatch)


def nested(depth: int) -> list:
    value = []
    for _ in range(depth):
        value = [value]
    return value


def test_wire_values_round_trip_and_others_are_named():
    value = {"x": torch.arange(6).reshape(2, 3).t(), "n": [1, 2.5, None, True, ("a",)]}
    back = wire.loads(wire.dumps(value))
    assert torch.equal(back["x"], value["x"]) and back["n"] == value["n"]
    for bad, name in [(object(), "object"), ({1.5: 0}, "dict key of type float"), ({1, 2}, "set")]:
        with pytest.raises(WireError, match=name):
            wire.wire_value(bad)
    with pytest.raises(WireError, match="not a plain one"):
        wire.wire_value(torch.zeros(2, requires_grad=True))
    with pytest.raises(WireError, match="levels of nesting"):
        wire.wire_value(nested(wire.MAX_DEPTH + 2))


def test_plain_makes_a_learners_result_a_wire_value():
    value = wire.wire_value(
        {"w": torch.nn.Parameter(torch.ones(2)), "names": {"b", "a"}}, plain=True
    )
    wire.wire_value(value)
    assert type(value["w"]) is torch.Tensor and value["names"] == ["a", "b"]


def test_a_channel_carries_frames_and_says_when_the_other_side_is_silent_or_gone():
    a_to_b, b_to_a = (
        os.pipe(),
        os.pipe(),
    )  # each (read fd, write fd), as the worker's stdin and stdout
    a, b = Channel(b_to_a[0], a_to_b[1]), Channel(a_to_b[0], b_to_a[1])
    try:
        a.send({"loss": torch.tensor(2.5)})
        assert b.receive(time.monotonic() + 5)["loss"].item() == 2.5
        start = time.monotonic()
        with pytest.raises(ChannelTimeout):
            b.receive(time.monotonic() + 0.2)
        assert time.monotonic() - start < 2
        os.close(a_to_b[1])  # a is gone
        with pytest.raises(ChannelClosed):
            b.receive(time.monotonic() + 5)
    finally:
        for fd in (a_to_b[0], *b_to_a):
            os.close(fd)


def test_a_frame_longer_than_the_cap_is_refused_before_it_is_read(monkeypatch):
    monkeypatch.setattr(wire, "MAX_FRAME", 100)
    read_fd, write_fd = os.pipe()
    try:
        os.write(write_fd, wire._LENGTH.pack(10**9))
        with pytest.raises(WireError, match="a frame of 1000000000 bytes"):
            Channel(read_fd, write_fd).receive(time.monotonic() + 5)
    finally:
        os.close(read_fd)
        os.close(write_fd)
