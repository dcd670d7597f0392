"""The worker: the one process where the learner's code runs. It answers the lab's process over the channel
(wire.py), and decides nothing: every verdict is made by the lab's process from the values sent back.

The worker protocol, as the rest of the workshop names it: learner code runs only here, never in the lab's
process; what crosses between the two is wire data (wire.py: values, tensors as copies, never code or objects
of the learner's); the lab's process asks (the requests below, made through learner/learner_code.py's handle) and
judges what comes back.

    python -m workshop.learner.worker [--rlimits JSON]   (natively and in a container alike: the channel is its
                                                          stdin and stdout, what it prints goes to stderr)

No path reaches it: the learner's file comes over the channel as text, compiled under the name the learner
knows it by (my-work/autograd.py), so tracebacks name it, and nothing else of the workspace is here. Its
stdout and stderr go to a capped log that nobody parses. Requests, each answered by one reply:
  {"op": "load", "device", "source", "filename", "allowed": [[module, name], ...]}
  {"op": "probe", "target": {"attributes": [NAME, ...]} | {"references": {NAME: "module:attr"}}, and "one":
   true where the probe gets the one piece itself, not {NAME: piece} (a probe over several pieces); "probe":
   "module:qualname" (Solution.probe sends the function so; a call is operator.call), or None: the value itself,
   "args": [...], "limit_s": CPU seconds}
A reply is {"ok": True, "value": ...} or {"ok": False, "kind", "error", "where"}, kind one of load, missing,
refused, not_started, error, time, wire, worker.
"""

from __future__ import annotations

import argparse
import builtins
import ctypes
import dis
import faulthandler
import importlib
import json
import linecache
import os
import pkgutil
import resource
import signal
import sys
import tempfile
import traceback
import types

from workshop.foundations.interrupt import TimeLimitExceeded, exercise_limit
from workshop.learner import wire

MODULE = "workshop_work"  # the learner's file, as a module of the worker
PR_SET_PDEATHSIG, PR_CAPBSET_DROP, PR_SET_NO_NEW_PRIVS = 1, 24, 38
CAPABILITY_VERSION_3 = 0x20080522
IMPORT_NAME = dis.opmap["IMPORT_NAME"]


def failure(kind: str, error: BaseException | str, filename: str | None = None) -> dict:
    """The reply that says a request failed: its kind, the error in one line, and filename:line of the innermost
    frame of `error` in the learner's file (None: not there); an error said as text is where `filename` says."""
    if isinstance(error, str):
        return {"ok": False, "kind": kind, "error": error, "where": filename}
    text = " ".join(str(error).split())[:2000]
    # a stub's text is its exercise's id, a time limit's the seconds: each said as it is, without its type
    if not isinstance(error, NotImplementedError | TimeLimitExceeded):
        text = f"{type(error).__name__}: {text}" if text else type(error).__name__
    lines = [f.lineno for f in traceback.extract_tb(error.__traceback__) if f.filename == filename]
    return {
        "ok": False,
        "kind": kind,
        "error": text,
        "where": f"{filename}:{lines[-1]}" if lines else None,
    }


class Refused(Exception):
    """A target that is not the learner's to run, its arg the reply that says so (failure): missing from the file
    (where: the file), or code from elsewhere (kind refused, error: the name, where: the file that defines it;
    the lab's process says it)."""


def guard_imports(filename: str, allowed: set[tuple[str, str | None]]) -> None:
    """Make builtins.__import__ and importlib.import_module refuse from the learner's file any import its header
    does not make (the lab's process checked the text already; this is the same rule at run time). An import
    statement in the learner's file is checked; so is a call of import_module from it. A call of __import__
    cannot be told apart from an import that torch's C code makes while the learner's line runs (C code adds no
    frame), so it is left to the lab's reading of the text, which refuses the name __import__."""
    real_import, real_import_module = builtins.__import__, importlib.import_module

    def check(name: str, fromlist, level: int, statement: bool) -> None:
        frame = sys._getframe(2)  # the caller of the guarded function
        if frame.f_code.co_filename != filename:
            return
        if statement and frame.f_code.co_code[frame.f_lasti] != IMPORT_NAME:
            return
        if level or any((name, n) not in allowed for n in (fromlist or [None])):
            raise ImportError(f"{name}: the file's header does not import it")

    def guarded_import(name, globals=None, locals=None, fromlist=(), level=0):  # noqa: A002
        check(name, fromlist, level, statement=True)
        return real_import(name, globals, locals, fromlist, level)

    def guarded_import_module(name, package=None):
        check(name, (), 0, statement=False)
        return real_import_module(name, package)

    builtins.__import__, importlib.import_module = guarded_import, guarded_import_module


class Session:
    """The worker's state: the learner's module once loaded."""

    def __init__(self, device: str = "cpu", reraise: bool = False):
        self.device = device  # the lab's, from the load request: where received tensors go
        # in the lab's own process (the reference): its errors are the lab's bugs
        self.reraise = reraise
        self.module: types.ModuleType | None = None
        self.filename: str | None = None

    def handle(self, request: dict) -> dict:
        if request.get("op") == "load":
            return self.load(request)
        try:
            target = self.target(request["target"])
        except Refused as e:
            return e.args[0]
        except NotImplementedError as e:
            return failure("not_started", e)
        except (LookupError, ImportError, ValueError) as e:
            return failure("load", e)
        probe = pkgutil.resolve_name(request["probe"]) if request.get("probe") else None
        try:
            with exercise_limit(request.get("limit_s")):
                value = probe(target, *request.get("args", ())) if probe else target
        except BaseException as e:  # noqa: BLE001 - the learner's SystemExit ends one call, not the worker
            if self.reraise:
                raise
            # SystemExit included: it ends one call
            kind = "not_started" if isinstance(e, NotImplementedError) else "error"
            return failure("time" if isinstance(e, TimeLimitExceeded) else kind, e, self.filename)
        # made a wire value as it is sent (wire.dumps); one that is not fails the reply there (main: kind wire)
        return {"ok": True, "value": value}

    def load(self, request: dict) -> dict:
        """The first request: the lab's device, and the learner's file."""
        self.device = request.get("device", "cpu")
        self.filename, source = request["filename"], request["source"]
        linecache.cache[self.filename] = (len(source), None, source.splitlines(True), self.filename)
        module = types.ModuleType(MODULE)
        module.__file__ = self.filename
        sys.modules[MODULE] = module  # dataclasses and pickling look modules up by name
        guard_imports(self.filename, {(module, name) for module, name in request["allowed"]})
        try:
            code = compile(source, self.filename, "exec")
            with exercise_limit(request.get("limit_s")):
                exec(code, module.__dict__)
        except SyntaxError as e:
            return failure("load", f"SyntaxError: {e.msg}", f"{self.filename}:{e.lineno}")
        except BaseException as e:  # noqa: BLE001 - whatever the file raises at import is the learner's
            return failure("time" if isinstance(e, TimeLimitExceeded) else "load", e, self.filename)
        self.module = module
        return {"ok": True}

    def target(self, spec: dict):
        """What a request names: the references of its pieces, or the learner's attributes (every missing name said
        at once, Refused "missing": "a, b"; a name whose code is not the learner's own refused, Refused "refused":
        the file that defines it); the one piece itself where `one` says so, else {name: piece} (for a probe that
        builds one thing from them: a custom op from its kernels)."""
        if "references" in spec:
            found = {name: pkgutil.resolve_name(ref) for name, ref in spec["references"].items()}
        else:
            missing = [name for name in spec["attributes"] if not hasattr(self.module, name)]
            if missing:
                raise Refused(failure("missing", ", ".join(missing), self.filename))
            found = {name: getattr(self.module, name) for name in spec["attributes"]}
            for name, value in found.items():
                # a triton.jit kernel keeps its function in .fn
                code = getattr(getattr(value, "fn", value), "__code__", None)
                if code is not None and code.co_filename != self.filename:
                    raise Refused(failure("refused", name, code.co_filename))
        return next(iter(found.values())) if spec.get("one") else found


def confine(limits: dict[str, list[int]]) -> None:
    """Before this worker reads a request (so before any learner code): lower its resource limits
    ({"RLIMIT_CPU": [soft, hard], ...}: a process may always lower its own, where another process may need
    CAP_SYS_RESOURCE to, foundations/worker_process.py); on Linux, be SIGKILLed when the lab's process dies, so
    that no learner code outlives it; and as root (a native worker that could not take a uid of its own), give
    up every capability: no ptrace of the lab's process, no reading past file permissions, no mounts, no setuid
    programs (no-new-privs). Root's own files stay root's: the native sandbox says so."""
    for name, (soft, hard) in limits.items():
        resource.setrlimit(getattr(resource, name), (soft, hard))
    if sys.platform != "linux":
        return
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.geteuid() != 0:
        return
    libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
    for capability in range(64):  # the bounding set: no exec can give them back
        libc.prctl(PR_CAPBSET_DROP, capability, 0, 0, 0)
    header = (ctypes.c_uint32 * 2)(CAPABILITY_VERSION_3, 0)
    # the new sets, all empty: version 3's two structs of (effective, permitted, inheritable), 32 bits each
    if libc.capset(header, (ctypes.c_uint32 * 6)()) != 0:
        raise OSError(ctypes.get_errno(), "capset: could not give up root's capabilities")


# The folders the worker's environment names for its scratch and caches (foundations/worker_process.py,
# worker_container.py). One it cannot write is the workshop's failure: found here, before the learner's code
# meets it (Triton writes its cache while the learner's file imports a kernel, and that looked like their error).
SCRATCH_VARIABLES = ("HOME", "TMPDIR", "TRITON_CACHE_DIR", "TORCHINDUCTOR_CACHE_DIR")


def scratch_problem() -> str | None:
    """Why this worker cannot write one of its folders, or None."""
    for name, folder in [
        (name, os.environ[name]) for name in SCRATCH_VARIABLES if os.environ.get(name)
    ]:
        try:
            os.makedirs(folder, exist_ok=True)
            with tempfile.TemporaryFile(dir=folder):
                pass
        except OSError as e:
            return f"it cannot write {name}={folder} as uid {os.getuid()}: {e.strerror or e}"
    return None


def main(argv: list[str] | None = None) -> int:
    # argparse refuses an option it does not know: a misspelt --rlimits stops the worker rather than run it with no
    # limits (none is right only in a container, whose limits are Docker's)
    p = argparse.ArgumentParser(prog="python -m workshop.learner.worker")
    p.add_argument(
        "--rlimits", default="{}", help='its resource limits, {"RLIMIT_CPU": [soft, hard], ...}'
    )
    confine(json.loads(p.parse_args(argv).rlimits))
    faulthandler.enable()  # a crash in native code prints the stack to the log: where it died
    # stdin/stdout are the channel: keep them on fds of their own, and send what the learner's code prints to
    # stderr (the capped log), so that no print can break a frame.
    channel = wire.Channel(os.dup(0), os.dup(1))
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
    os.dup2(2, 1)
    session = Session()
    problem = scratch_problem()
    if problem is not None:
        channel.send(failure("worker", problem))
        return 1
    channel.send({"ok": True, "ready": True})
    while True:
        try:
            request = channel.receive()
        except wire.ChannelClosed:
            return 0
        try:
            reply = session.handle(request)
            # received tensors go to the lab's device, once the load request has named it
            channel.map_location = session.device
        # the worker's own bug (or a request it cannot read): said, not hidden
        except Exception as e:
            reply = failure("worker", e)
        try:
            channel.send(reply)
        except wire.WireError as e:
            channel.send(failure("wire", str(e)))


if __name__ == "__main__":
    sys.exit(main())
