"""What "no autograd" forbids, and the watcher that looks for it while the learner's code runs (in the worker).

An exercise graded "without autograd" may use any tensor operation, but none of these:
1. autograd's engine, in any thread or process: `.backward()`, `torch.autograd.grad` / `backward` /
   `functional`, `torch.func` and functorch transforms (grad, vjp, jvp, jacrev, jacfwd, hessian), calling a
   grad_fn node;
2. tensors that require grad: `requires_grad_()`, `requires_grad=True`, an op recording a graph (grad mode on and
   an input that requires grad), a returned tensor that requires grad;
3. aten's derivative ops: any op whose name holds "backward" (`_log_softmax_backward_data`,
   `_softmax_backward_data`, `nll_loss_backward`, `threshold_backward`, ...), called directly;
4. a process started from the learner's code (what runs there cannot be watched).

Two watchers, made for the learner's code running in this process, on every thread:
- module-level patches, in force for every thread: the engine's entry point (`Variable._execution_engine`), and
  the starting of threads (each new thread runs under the dispatch watcher below) and of processes;
- a TorchDispatchMode on the calling thread and on every thread started while it watches, which sees each aten
  op: run by the engine (`torch._C._current_graph_task_id() != -1`), recording a graph, or a derivative op.
Both run inside the worker, where the learner's code runs: a hostile learner can switch them off (pop the mode,
undo a patch). The harness backs them with its own scan of the learner's source (source_check.autograd_uses),
which a hostile learner can also evade (names built at run time): "no autograd" is an honest-learner rule.
"""

from __future__ import annotations

import _posixsubprocess
import _thread
import contextlib
import os
import subprocess
import threading

import torch
from torch.autograd.variable import Variable
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

KEPT = 20  # events kept for the reply; the count goes on


class Events:
    """What the watchers saw, shared by every thread: each event a short text, at most KEPT kept."""

    def __init__(self):
        self.seen: list[str] = []
        self.count = 0
        self._lock = threading.Lock()

    def add(self, what: str) -> None:
        with self._lock:
            self.count += 1
            if len(self.seen) < KEPT and what not in self.seen:
                self.seen.append(what)


def requires_grad(args, kwargs) -> bool:
    return any(isinstance(a, torch.Tensor) and a.requires_grad for a in tree_leaves((args, kwargs)))


class DispatchWatch(TorchDispatchMode):
    """Sees every aten op of the thread it is entered on (and of the engine's threads it starts)."""

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        return False  # True imports torch._dynamo on the first op (3.5 s); nothing here is compiled

    def __init__(self, events: Events, calls_nodes: bool):
        super().__init__()
        self.events = events
        # the exercise itself calls grad_fn nodes (a hand-made engine): their derivative ops are allowed
        self.calls_nodes = calls_nodes

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = str(func)
        if torch._C._current_graph_task_id() != -1:
            self.events.add(f"engine: {name}")
        elif self.calls_nodes:
            pass  # a grad_fn node called by hand runs derivative ops, and may record a graph
        elif "backward" in name:
            self.events.add(f"derivative op: {name}")
        elif torch.is_grad_enabled() and requires_grad(args, kwargs):
            self.events.add(f"recorded for autograd: {name}")
        return func(*args, **kwargs)


class _EngineProxy:
    """Stands for autograd's engine object: every run_backward, from any thread, is an event."""

    def __init__(self, engine, watcher: Watcher):
        self._engine, self._watcher = engine, watcher

    def run_backward(self, *args, **kwargs):
        if self._watcher.events is not None:
            self._watcher.events.add(
                f"engine: run_backward on thread {threading.current_thread().name}"
            )
        return self._engine.run_backward(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(self._engine, name)


class Watcher:
    """Installs the module-level patches once per process; `watching()` turns recording on for one call."""

    def __init__(self):
        self.events: Events | None = None
        self.calls_nodes = False
        Variable._execution_engine = _EngineProxy(Variable._execution_engine, self)
        self._patch_threads()
        self._patch_processes()

    def _mode(self) -> DispatchWatch | contextlib.nullcontext:
        if self.events is None:
            return contextlib.nullcontext()
        return DispatchWatch(self.events, self.calls_nodes)

    def _patch_threads(self) -> None:
        run, start_new_thread = threading.Thread.run, _thread.start_new_thread

        def watched_run(thread):
            with self._mode():
                run(thread)

        def watched_start(function, args, kwargs=None):
            mode = self._mode()

            def body(*a, **k):
                with mode:
                    return function(*a, **k)

            return start_new_thread(body, args, kwargs or {})

        threading.Thread.run = watched_run
        _thread.start_new_thread = watched_start

    def _patch_processes(self) -> None:
        def refused(original, what):
            def start(*args, **kwargs):
                if self.events is not None:
                    self.events.add(f"process: {what}")
                    raise PermissionError(f"{what}: the exercise may start no process")
                return original(*args, **kwargs)

            return start

        for name in ("fork", "forkpty", "posix_spawn", "posix_spawnp", "system"):
            setattr(os, name, refused(getattr(os, name), f"os.{name}"))
        # subprocess and multiprocessing's spawn both end in _posixsubprocess.fork_exec
        subprocess._fork_exec = refused(subprocess._fork_exec, "subprocess")
        _posixsubprocess.fork_exec = refused(_posixsubprocess.fork_exec, "fork_exec")

    @contextlib.contextmanager
    def watching(self, calls_nodes: bool = False):
        """Within: every event is recorded in the Events yielded."""
        self.events, self.calls_nodes = Events(), calls_nodes
        try:
            with DispatchWatch(self.events, calls_nodes):
                yield self.events
        finally:
            self.events = None
