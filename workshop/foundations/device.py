"""Which device a run uses: --device auto picks CUDA when there is one, otherwise the CPU; whether Triton
kernels run in Triton's interpreter (on the CPU) or compiled (on CUDA); what a run records of its machine; and
`import torch` for the processes of a check (import_torch, below)."""

from __future__ import annotations

import gc
import glob
import importlib.metadata
import importlib.util
import os
import platform
import runpy
import sys
import types
from collections.abc import MutableMapping
from pathlib import Path

from workshop.i18n import _

CHOICES = ("auto", "cpu", "cuda")
# The device files a GPU torch.cuda can use is reached through on Linux: NVIDIA's driver (/dev/nvidiactl,
# /dev/nvidia0, ...), WSL2's GPU (/dev/dxg), ROCm's (/dev/kfd: torch.cuda on AMD). Without one, no CUDA runtime
# can open a GPU, so torch sees none.
GPU_DEVICE_FILES = ("/dev/nvidia*", "/dev/dxg", "/dev/kfd")


class DeviceError(RuntimeError):
    """A device this machine cannot run on (--device cuda without a GPU) or that is no device; its message says
    which, and what to pass instead."""


def cuda_available() -> bool:
    """Whether torch sees a CUDA GPU. Asking torch costs its import (about 2 s of CPU on a small machine, in
    every command that runs a lab), so where no GPU device file exists (or on macOS, where torch has no CUDA)
    the answer is no without asking; elsewhere torch answers."""
    if sys.platform == "darwin":
        return False
    if sys.platform.startswith("linux") and not any(glob.glob(p) for p in GPU_DEVICE_FILES):
        return False
    import torch

    return torch.cuda.is_available()


def resolve(requested: str) -> str:
    if requested not in CHOICES:
        raise DeviceError(
            _("unknown device {device!r}; choose one of {choices}").format(
                device=requested, choices=", ".join(CHOICES)
            )
        )
    if requested == "cpu":  # no question for torch: a CPU run's parent never imports it
        return requested
    has_cuda = cuda_available()
    if requested == "cuda" and not has_cuda:
        raise DeviceError(
            _("--device cuda was asked for, but torch sees no CUDA GPU here; use --device cpu")
        )
    return "cuda" if has_cuda else "cpu"


def use_triton_interpreter(
    env: MutableMapping[str, str] = os.environ, device: str = "auto"
) -> bool:
    """Sets TRITON_INTERPRET=1 in `env` where Triton kernels will run on the CPU: device "cpu", or "auto" with no
    CUDA GPU. Returns whether the interpreter is on.

    Triton has no CPU backend; its interpreter (numpy) must be chosen before triton is imported, because
    triton.language makes its own @jit helpers (tl.sum, tl.max) at that import. So this runs before any import
    of triton: in a lab's environment (runner), in the test session (conftest) and in workshop.ops.
    """
    if device == "auto":
        device = "cuda" if cuda_available() else "cpu"
    if device == "cpu" and env.get("TRITON_INTERPRET") != "1":
        if env is os.environ and "triton" in sys.modules:
            raise ImportError(
                _(
                    "no CUDA GPU, and triton was imported before TRITON_INTERPRET=1 was set; set "
                    "TRITON_INTERPRET=1 in the environment before anything imports triton "
                    "(torch._dynamo and torch.compile do)"
                )
            )
        env["TRITON_INTERPRET"] = "1"
    return env.get("TRITON_INTERPRET") == "1"


def device_facts(device: str) -> dict:
    """What a run's manifest records of the machine it runs on, and its versions: torch's, its CUDA's and
    triton's read without importing them (torch's import costs seconds of CPU in every command that runs a lab):
    torch/version.py is the file torch.__version__ and torch.version.cuda come from; triton's version is its
    installed package's."""
    torch_version = runpy.run_path(
        str(Path(importlib.util.find_spec("torch").origin).with_name("version.py"))
    )
    try:
        triton_version = importlib.metadata.version("triton")
    except importlib.metadata.PackageNotFoundError:
        triton_version = None
    gpu = {"device_name": platform.processor() or "cpu", "gpu_count": 0}
    if device == "cuda":
        import torch

        gpu = {"device_name": torch.cuda.get_device_name(0), "gpu_count": torch.cuda.device_count()}
    return {
        "python": platform.python_version(),
        "torch": torch_version["__version__"],
        "triton": triton_version,
        "cuda": torch_version["cuda"],
        "device": device,
        **gpu,
        "cpu_count": os.cpu_count(),
        "platform": platform.platform(),
    }


# `import torch` for the processes of a check, where it is most of the learner's wait: the lab's process and the
# learner's worker each import it, at once (the worker is started first: learner/learner_code.py's Worker.begin).
#
# The import builds a few hundred thousand objects. With Python's cyclic garbage collector off while it runs, no
# collection walks them again and again (measured on the 2-core machine: 1.84 s of CPU instead of 2.03 s, median
# of 8); frozen afterwards (gc.freeze), no later collection walks them either, nor the last one at exit, which took
# 0.6-0.9 s after a check's verdict was written.


def import_torch() -> types.ModuleType:
    """torch, imported with the collector off, then its objects frozen (kept out of every later collection);
    already imported (a test's process), just torch."""
    if "torch" in sys.modules:
        return sys.modules["torch"]
    enabled = gc.isenabled()
    gc.disable()
    try:
        return importlib.import_module("torch")
    finally:
        gc.freeze()
        if enabled:
            gc.enable()
