"""Which device a run uses: --device auto picks CUDA when there is one, otherwise the CPU."""

from __future__ import annotations

CHOICES = ("auto", "cpu", "cuda")


class DeviceError(RuntimeError):
    pass


def resolve(requested: str) -> str:
    import torch

    if requested not in CHOICES:
        raise DeviceError(f"unknown device {requested!r}; choose one of {', '.join(CHOICES)}")
    has_cuda = torch.cuda.is_available()
    if requested == "cuda" and not has_cuda:
        raise DeviceError(
            "--device cuda was asked for, but torch sees no CUDA GPU here; use --device cpu"
        )
    if requested == "auto":
        return "cuda" if has_cuda else "cpu"
    return requested


def describe(device: str) -> str:
    import torch

    if device == "cuda":
        return f"cuda ({torch.cuda.get_device_name(0)}, {torch.cuda.device_count()} visible)"
    return "cpu"
