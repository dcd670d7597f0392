"""The private channel between the lab's process and the worker that runs the learner's code.

What crosses it are wire values only: tensors (plain, strided), None, bool, int, float, str, and lists, tuples
and dicts of these. A message is one frame: 8 bytes of length (big-endian), then the value as `torch.save`
writes it. The receiver loads it with `torch.load(weights_only=True)`, whose unpickler rebuilds tensors and
plain containers and refuses every other class, then checks the result is a wire value; so nothing the worker
pickles is ever unpickled by the lab's process as code. Frames are capped in size, values in depth and count.

The channel is two file descriptors that a process inherited (the worker's stdin and stdout, natively and with
Docker alike), never a path: the worker knows no path of the run.
"""

from __future__ import annotations

import io
import os
import select
import struct
import time

from workshop.foundations.device import import_torch

torch = import_torch()

MAX_FRAME = (
    512 * 2**20
)  # bytes: the largest value either side sends (a few (64, 600) tensors are ~1 MiB)
MAX_DEPTH = 32  # nesting of lists, tuples and dicts
MAX_ITEMS = 100_000  # values in one message, tensors and scalars counted alike
_LENGTH = struct.Struct(">Q")


class WireError(Exception):
    """A frame that is not a wire value: too big, cut short, not loadable, or holding another type."""


class ChannelClosed(WireError):
    """The other side closed the channel (the worker exited or died)."""


class ChannelTimeout(WireError):
    """No whole frame arrived (or could be sent) before the deadline."""


def wire_value(value, plain: bool = False, depth: int = 0, count: list[int] | None = None):
    """`value` if it is a wire value (see the module's docstring), else WireError. With `plain` (what is sent), it
    is made one first where it can be: tensor subclasses (nn.Parameter, say) as plain tensors, detached, and a
    set of names as a list, in an order that does not vary (a result requiring grad is autograd's business: the
    lab's watcher sees the graph recorded; an argument requiring grad, an autograd.Function's input, crosses as
    its values). What is received is only checked."""
    count = count if count is not None else [0]
    count[0] += 1
    if count[0] > MAX_ITEMS or depth > MAX_DEPTH:
        raise WireError(f"more than {MAX_ITEMS} values or {MAX_DEPTH} levels of nesting")
    if plain and isinstance(value, torch.Tensor):
        value = value.detach().as_subclass(torch.Tensor)
    if plain and type(value) in (set, frozenset):
        return sorted((wire_value(item, plain, depth + 1, count) for item in value), key=repr)
    kind = type(value)
    if kind is torch.Tensor and (
        value.layout is not torch.strided or value.is_meta or value.requires_grad
    ):
        raise WireError(f"a tensor that is not a plain one ({value.layout}, {value.device})")
    keys = [key for key in value if type(key) not in (str, int)] if kind is dict else []
    if keys:
        raise WireError(f"a dict key of type {type(keys[0]).__name__}")
    if kind not in (type(None), bool, int, float, str, torch.Tensor, list, tuple, dict):
        raise WireError(f"a value of type {kind.__name__}")
    # a container's items (a scalar or a tensor has none), each counted and checked in turn
    if kind is dict:
        return {key: wire_value(item, plain, depth + 1, count) for key, item in value.items()}
    if kind in (list, tuple):
        return kind(wire_value(item, plain, depth + 1, count) for item in value)
    return value


def dumps(value) -> bytes:
    """`value` made a wire value (wire_value with plain) as torch.save writes it."""
    buffer = io.BytesIO()
    torch.save(wire_value(value, plain=True), buffer)
    return buffer.getvalue()


def loads(payload: bytes, map_location: str = "cpu"):
    try:
        value = torch.load(io.BytesIO(payload), weights_only=True, map_location=map_location)
    except Exception as e:  # the restricted unpickler refuses anything but tensors and containers
        raise WireError(f"not a wire value: {type(e).__name__}: {str(e)[:200]}") from None
    return wire_value(value)


class Channel:
    """One end of the channel: frames read from `read_fd`, written to `write_fd` (the two ends of two pipes).

    Reads and writes take a deadline (time.monotonic(), None: wait for ever), so a side that stops answering
    (an endless loop in the learner's code) never blocks the other."""

    def __init__(self, read_fd: int, write_fd: int, map_location: str = "cpu"):
        self.read_fd, self.write_fd = read_fd, write_fd
        self.map_location = (
            map_location  # where received tensors go: the lab's device, on both sides
        )
        for fd in {read_fd, write_fd}:
            os.set_blocking(
                fd, False
            )  # select() then says when; a write never blocks past the deadline

    def send(self, value, deadline: float | None = None) -> None:
        payload = dumps(value)
        if len(payload) > MAX_FRAME:
            raise WireError(f"a frame of {len(payload)} bytes (at most {MAX_FRAME})")
        self._write(_LENGTH.pack(len(payload)) + payload, deadline)

    def receive(self, deadline: float | None = None) -> dict:
        """One message: a dict (a request, or its reply)."""
        (length,) = _LENGTH.unpack(self._read(_LENGTH.size, deadline))
        if length > MAX_FRAME:
            raise WireError(f"a frame of {length} bytes (at most {MAX_FRAME})")
        message = loads(self._read(length, deadline), self.map_location)
        if not isinstance(message, dict):
            raise WireError("a message that is not a dict")
        return message

    def _wait(self, fd: int, writing: bool, deadline: float | None) -> None:
        left = None if deadline is None else deadline - time.monotonic()
        waited = ([], [fd]) if writing else ([fd], [])
        # select() refuses a negative wait: a deadline passed is a timeout before it is asked
        if (left is not None and left <= 0) or not any(select.select(*waited, [], left)):
            raise ChannelTimeout("the other side did not answer in time")

    def _read(self, n: int, deadline: float | None) -> bytes:
        data = bytearray()
        while len(data) < n:
            self._wait(self.read_fd, False, deadline)
            try:
                chunk = os.read(self.read_fd, min(n - len(data), 2**20))
            except BlockingIOError:
                continue
            if not chunk:  # the end of the stream: the other side is gone
                raise ChannelClosed("the channel was closed")
            data += chunk
        return bytes(data)

    def _write(self, data: bytes, deadline: float | None) -> None:
        view = memoryview(data)
        while view:
            self._wait(self.write_fd, True, deadline)
            try:
                view = view[os.write(self.write_fd, view[: 2**20]) :]
            except BlockingIOError:
                continue
            except BrokenPipeError:
                raise ChannelClosed("the channel was closed") from None
