"""Capture what each stage of torch.compile produced: Dynamo's FX graph, AOTAutograd's forward and backward
graphs, and Inductor's generated code.

How, with public or long-stable entry points only:
- Dynamo hands every captured graph to a *backend*, a plain function (gm, example_inputs) -> callable. Ours
  records the graph, then hands it on to Inductor's own entry point `compile_fx`.
- `compile_fx` runs AOTAutograd, which splits the graph into a forward and a backward graph and passes each to
  `inner_compile` (is_backward=True marks the backward). Ours records the graph and calls Inductor's default.
- What `inner_compile` returns (a CompiledFxGraph) keeps the module source Inductor generated for that graph in
  `.source_code`. (`torch._inductor.utils.run_and_get_code` would also return it, but it resets Dynamo first,
  throwing away every function compiled before.)
A cache hit skips code generation, so `fresh_codegen()` turns Inductor's and AOTAutograd's graph caches off.
"""

from __future__ import annotations

import contextlib
import time

import torch
import torch._functorch.config as functorch_config
import torch._inductor.config as inductor_config
from torch._inductor.compile_fx import compile_fx, compile_fx_inner


@contextlib.contextmanager
def fresh_codegen():
    """Turn off the caches that would let Inductor skip code generation (torch 2.11 and 2.13 have both)."""
    with (
        inductor_config.patch({"fx_graph_cache": False}),
        functorch_config.patch({"enable_autograd_cache": False}),
    ):
        yield


def recording_backend(capture: dict):
    """A Dynamo backend that compiles with Inductor, recording Dynamo's graph, AOT's graphs and Inductor's code
    in `capture` (compile_and_capture's)."""

    def inner(gm, example_inputs, **kwargs):
        kind = (
            "backward"
            if kwargs.get("is_backward")
            else "inference"
            if kwargs.get("is_inference")
            else "forward"
        )
        capture["aot"].setdefault(kind, []).append(gm)
        compiled = compile_fx_inner(gm, example_inputs, **kwargs)
        key = (
            kind if kind not in capture["code"] else f"{kind}_{len(capture['aot'][kind]) - 1}"
        )  # after a graph break
        capture["code"][key] = getattr(compiled, "source_code", None) or ""
        return compiled

    def backend(gm: torch.fx.GraphModule, example_inputs):
        capture["dynamo"].append(gm)
        return compile_fx(gm, example_inputs, inner_compile=inner)

    return backend


def compile_and_capture(fn, drive=None, *args, dynamic: bool | None = False):
    """Compile fn with the recording backend and run `drive(compiled, *args)` once (default: compiled(*args)).

    Returns (compiled fn, drive's result, what its compile produced). drive may do more than call it: a training step's
    loss.backward() runs the compiled backward, which AOTAutograd compiles lazily during that first backward,
    so it is captured as well.
    """
    # One compiled function's artifacts, in the order the stages made them.
    capture = {
        "dynamo": [],  # Dynamo's FX graphs, one per captured graph (graph breaks add)
        "aot": {},  # "forward"/"backward"/"inference" -> AOTAutograd's graphs
        "code": {},  # "forward", "backward", ... -> Inductor's module source
        "compile_s": 0.0,  # wall time of the first call (trace + compile + run)
    }
    compiled = torch.compile(fn, backend=recording_backend(capture), dynamic=dynamic)
    drive = drive or (lambda f, *a: f(*a))
    with fresh_codegen():
        start = time.perf_counter()
        result = drive(compiled, *args)
        capture["compile_s"] = time.perf_counter() - start
    return compiled, result, capture
