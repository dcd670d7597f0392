"""The tensor lab's typical wrong solutions, as a learner's file would hold them (its header's imports only): each
test binds one to the exercise's name in a workspace and expects the check to name its mistake."""

from __future__ import annotations

import torch
from torch.utils._pytree import tree_leaves, tree_map_only


def narrow_strides_in_bytes(x, dim, start, length):
    """Strides and offset in bytes: each multiplied by the element's size."""
    size = list(x.shape)
    size[dim] = length
    stride = [s * x.element_size() for s in x.stride()]
    return x.as_strided(size, stride, x.storage_offset() + start * stride[dim])


def narrow_offset_of_x_forgotten(x, dim, start, length):
    """The offset counted from x's first element, as if x started its storage."""
    size = list(x.shape)
    size[dim] = length
    return x.as_strided(size, x.stride(), start * x.stride(dim))


def narrow_by_narrow(x, dim, start, length):
    """Right values, but torch's own narrow instead of as_strided."""
    return x.narrow(dim, start, length)


def diagonal_of_a_contiguous_tensor(x):
    """The diagonal's stride worked out from the sizes, as if x were contiguous."""
    return x.as_strided((min(x.shape),), (x.shape[1] + 1,), x.storage_offset())


def window_copied(x, size, step):
    """The right windows, then copied: a tensor with a storage of its own."""
    *lead, length = x.shape
    *lead_strides, last = x.stride()
    n = (length - size) // step + 1
    return x.as_strided(
        (*lead, n, size), (*lead_strides, step * last, last), x.storage_offset()
    ).clone()


def count_without_bias(self, func, types, args=(), kwargs=None):
    """addmm's FLOPs counted as the product's alone."""
    kwargs = kwargs or {}
    out = func(*args, **kwargs)
    name = str(func)
    if func is torch.ops.aten.mm.default:
        self.flops[name] += 2 * args[0].shape[0] * args[0].shape[1] * args[1].shape[1]
    elif func is torch.ops.aten.addmm.default:
        self.flops[name] += 2 * args[1].shape[0] * args[1].shape[1] * args[2].shape[1]
    if not func.is_view:
        tensors = [t for t in tree_leaves((args, kwargs, out)) if isinstance(t, torch.Tensor)]
        self.bytes[name] += sum(t.numel() * t.element_size() for t in tensors)
    return out


def count_forgetting_func(self, func, types, args=(), kwargs=None):
    """Counts the op, never runs it."""
    self.flops[str(func)] += 0


def record_without_unwrapping(cls, func, types, args=(), kwargs=None):
    """func called on the wrappers themselves."""
    cls.log.append(str(func))
    return func(*args, **(kwargs or {}))


def record_without_wrapping(cls, func, types, args=(), kwargs=None):
    """Results handed back plain: the next ops never reach the class."""
    cls.log.append(str(func))
    args, kwargs = tree_map_only(cls, lambda t: t.elem, (args, kwargs or {}))
    return func(*args, **kwargs)
