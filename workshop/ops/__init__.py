"""Hand-written operators registered with PyTorch: `workshop.ops.softmax` is `torch.ops.workshop.softmax`."""

from workshop.foundations.device import use_triton_interpreter

# No CUDA: Triton's interpreter, chosen before any module of this package imports triton.
INTERPRETED = use_triton_interpreter()

from workshop.ops.softmax_op import softmax  # noqa: E402

__all__ = ["INTERPRETED", "softmax"]
