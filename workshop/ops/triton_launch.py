"""Launching a @triton.jit kernel from eager code for the cost of the launch itself, and a record of what ran.

`kernel[grid](*args, **constexprs)` (Triton's JITFunction.run) redoes on every call what only the first call of a
kind needs: it binds the arguments to the signature, derives the specialization from each one (types, 16-byte
alignment, ints equal to 1 or divisible by 16), hashes that into a key, finds the compiled kernel, checks the
globals it read, and only then calls the compiled kernel's launcher. `launch` keeps the compiled kernel itself,
keyed on everything a specialization can depend on (the kernel, the constexprs and launch options, every int
argument's value, the tensors' dtype, device and 16-byte alignment), and on a hit calls that launcher directly,
with the arguments JITFunction.run would pass it. A miss (a new shape) is one ordinary `kernel[grid](...)`.

Three paths, one call:
- `wrap` given (torch.library.wrap_triton, in a triton_op's body) and the body traced by torch.compile:
  `wrap(kernel)[grid](...)` puts the launch into the traced graph; nothing runs now, and nothing is recorded:
  Inductor's generated code is the evidence. When the triton_op runs eagerly, wrap_triton returns the kernel
  itself, and the launch takes one of the two paths below;
- Triton's interpreter (CPU): `kernel[grid](...)` runs the kernel in numpy, one program after another;
- CUDA: the cached launch.

`recording()` collects a `Launch` (kernel name, grid, constexprs) for every launch made eagerly inside it, on the
CPU and on CUDA alike: the proof that a kernel ran and with which parameters. Outside it the cost is one test of
a module global per launch.
"""

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field

import torch
import triton

from workshop.ops import INTERPRETED

# Compiled-kernel entries kept; more distinct kinds of call than that start the cache afresh.
CACHE_LIMIT = 4096


@dataclass(frozen=True)
class Launch:
    """One launch: the @triton.jit function's name (e.g. "_fwd_one_pass"), its grid (programs, 1-D) and its
    compile-time parameters and launch options (e.g. {"ROWS": 4, "BLOCK_N": 64, ..., "num_warps": 4})."""

    kernel: str
    grid: tuple[int]
    constexprs: dict
    # the @triton.jit function itself
    function: object = field(default=None, compare=False, repr=False)
    # on a GPU, the triton CompiledKernel that ran (its .asm holds the kernel's IR); None under the interpreter
    compiled: object = field(default=None, compare=False, repr=False)


# The list `recording()` collects into; None: not recording.
_recorded: list[Launch] | None = None
# key -> (the triton CompiledKernel, its constexpr values in signature order, the current-stream getter)
_compiled: dict[tuple, tuple] = {}


@contextlib.contextmanager
def recording() -> Iterator[list[Launch]]:
    """`with recording() as launches:` appends every eager launch inside the block to `launches`."""
    global _recorded
    outer, _recorded = _recorded, []
    try:
        yield _recorded
    finally:
        if outer is not None:
            outer.extend(_recorded)  # nested recordings: the outer one sees everything too
        _recorded = outer


def launch(kernel, grid: tuple[int], tensors: tuple, ints, constexprs: dict, wrap=None) -> None:
    """kernel[grid](*tensors, *ints, **constexprs), for a kernel whose parameters are its tensors, then its ints,
    then its constexprs (`num_warps` may be among `constexprs`: a launch option, not a parameter)."""
    # In a triton_op's body, wrap_triton hands back the kernel itself when the op runs eagerly; when torch.compile
    # traces the body, a wrapper whose launch puts the kernel into the graph (nothing runs, nothing is recorded).
    # The body is traced on fake or functional tensors, never on plain ones: on those the kernel runs, and
    # wrap_triton's own tests (a microsecond or more) are not asked. An interpreted kernel has nothing to trace,
    # and torch 2.11's wrap_triton refuses one (2.13 hands it back).
    first = tensors[0]
    traced = (
        wrap(kernel)
        if wrap is not None and not INTERPRETED and type(first) is not torch.Tensor
        else kernel
    )
    if traced is not kernel:
        traced[grid](*tensors, *ints, **constexprs)
        return
    if INTERPRETED:
        _record(kernel, grid, constexprs)
        kernel[grid](*tensors, *ints, **constexprs)
        return
    device = first.get_device()
    pointers = [t.data_ptr() for t in tensors]
    # id(kernel): its hash would hash its source; the kernel lives as long as the entry (which references it)
    key = (
        id(kernel),
        first.dtype,
        device,
        *ints,
        *constexprs.values(),
        *[p % 16 == 0 for p in pointers],
    )
    entry = _compiled.get(key)
    if entry is None:
        _record(
            kernel, grid, constexprs, _compiled_launch(key, kernel, grid, tensors, ints, constexprs)
        )
        return
    compiled, constexpr_values, current_stream = entry
    _record(kernel, grid, constexprs, compiled)
    stream = current_stream(device)
    hooks = triton.knobs.runtime
    enter, leave = _hook(hooks.launch_enter_hook), _hook(hooks.launch_exit_hook)
    metadata = None
    if enter is not None:
        metadata = compiled.launch_metadata(grid, stream, *tensors, *ints, *constexpr_values)
    # The call that ends JITFunction.run (triton 3.6 and 3.7 alike), for a 1-D grid. Pointers are passed as
    # ints: Triton's launcher then takes them as they are, where for a tensor it would call data_ptr() and ask
    # the driver whether the address is on the device (checked here already: the op accepts CUDA tensors only).
    launcher, function, packed = compiled.run, compiled.function, compiled.packed_metadata
    launcher(
        grid[0],
        1,
        1,
        stream,
        function,
        packed,
        metadata,
        enter,
        leave,
        *pointers,
        *ints,
        *constexpr_values,
    )


def _record(kernel, grid: tuple[int], constexprs: dict, compiled=None) -> None:
    if _recorded is not None:
        _recorded.append(Launch(kernel.__name__, grid, constexprs, kernel, compiled))


def _hook(hook):
    """A launch hook, or None where it would do nothing: triton 3.6 keeps an empty HookChain rather than None,
    and the launcher calls whatever it is given (a Python call per launch)."""
    return None if hook is None or getattr(hook, "calls", True) == [] else hook


def _compiled_launch(key: tuple, kernel, grid, tensors, ints, constexprs):
    """The first launch of a kind: Triton's own path, which compiles (or finds) the kernel; then keep it. Returns
    the compiled kernel."""
    n_args = len(tensors) + len(ints)
    names = kernel.arg_names[n_args:]  # the constexpr parameters, in signature order
    if (
        len(grid) != 1
        or n_args + len(names) != len(kernel.arg_names)
        or set(names) - set(constexprs)
    ):
        raise TypeError(
            f"launch: {kernel.__name__} needs a 1-D grid and parameters: tensors, ints, then constexprs"
        )
    compiled = kernel[grid](*tensors, *ints, **constexprs)
    if len(_compiled) >= CACHE_LIMIT:
        _compiled.clear()
    current_stream = triton.runtime.driver.active.get_current_stream
    _compiled[key] = (compiled, tuple(constexprs[name] for name in names), current_stream)
    return compiled
