"""Hand-written operators registered with PyTorch: `workshop.ops.softmax` is `torch.ops.workshop.softmax`."""

from workshop.device import use_triton_interpreter

INTERPRETED = (
    use_triton_interpreter()
)  # no CUDA: Triton's interpreter, chosen before this package imports triton

from workshop.ops.softmax_op import softmax  # noqa: E402

__all__ = ["INTERPRETED", "softmax"]
