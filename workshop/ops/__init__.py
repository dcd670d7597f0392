"""Hand-written operators registered with PyTorch: `workshop.ops.softmax` is `torch.ops.workshop.softmax`."""

from workshop.ops.softmax_op import softmax

__all__ = ["softmax"]
