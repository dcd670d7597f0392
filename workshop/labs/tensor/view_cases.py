"""The cases the three view exercises are run on: tensors with random sizes, strides and storage offsets (each a
view into a larger storage, rarely contiguous), and a view of the head's own W, with torch's view of each: the
reference the learner's as_strided view is compared with."""

from __future__ import annotations

import torch

from workshop.engine import Case

N_RANDOM = 6  # random inputs per exercise, besides the head's W[2::3, 16:]


def strided_input(generator: torch.Generator, ndim: int, device: str) -> torch.Tensor:
    """A float32 tensor of `ndim` random sizes (2 to 7) read from a larger storage through permuted, spaced
    strides and a random offset: what a view of a view looks like."""
    size = torch.randint(2, 8, (ndim,), generator=generator).tolist()
    order = torch.randperm(ndim, generator=generator).tolist()  # which dimension is innermost, ...
    spacing = torch.randint(1, 3, (ndim,), generator=generator).tolist()  # 2: every other element
    stride, step = [0] * ndim, 1
    for d in reversed(order):
        stride[d] = step * spacing[d]
        step = stride[d] * size[d]
    offset = int(torch.randint(0, 9, (1,), generator=generator))
    storage = torch.randn(offset + step, generator=generator)  # room for the last element and more
    return storage.to(device).as_strided(size, stride, offset)


def facts(x: torch.Tensor) -> dict:
    """What a diagnosis may read of the input: its offset, strides, and a contiguous tensor's strides."""
    contiguous = list(torch.empty(x.shape, device="meta").stride())
    return {
        "x_offset": x.storage_offset(),
        "x_stride": list(x.stride()),
        "contiguous_stride": contiguous,
        "element_size": x.element_size(),
    }


def case(label: str, x: torch.Tensor, args: tuple, view: torch.Tensor) -> Case:
    """The case of x and args, with torch's view as the reference's output."""
    want = {
        "size": list(view.shape),
        "stride": list(view.stride()),
        "offset": view.storage_offset(),
        "values": view.clone(),
    }
    return Case(label, (x, *args), {"view": want}, facts(x))


def view_cases(view: str, W: torch.Tensor, seed: int) -> list[Case]:
    """The cases of an exercise that writes torch's `view` ("narrow", "diagonal" or "unfold"), torch's own view
    in each."""
    generator = torch.Generator().manual_seed(seed)
    inputs = [("W[2::3, 16:]", W[2::3, 16:])]  # (200, 48), offset 144: the head's own
    for k in range(N_RANDOM):
        x = strided_input(generator, 2 if view == "diagonal" else 2 + k % 2, W.device.type)
        inputs.append(
            (f"random {tuple(x.shape)}, stride {x.stride()}, offset {x.storage_offset()}", x)
        )
    cases = []
    for label, x in inputs:
        if view == "narrow":
            dim = int(torch.randint(0, x.dim(), (1,), generator=generator))
            start = int(torch.randint(1, x.shape[dim], (1,), generator=generator))
            length = int(torch.randint(1, x.shape[dim] - start + 1, (1,), generator=generator))
            cases.append(case(label, x, (dim, start, length), x.narrow(dim, start, length)))
        elif view == "diagonal":
            cases.append(case(label, x, (), x.diagonal()))
        else:
            size = int(torch.randint(1, x.shape[-1] + 1, (1,), generator=generator))
            step = int(torch.randint(1, 4, (1,), generator=generator))
            cases.append(case(label, x, (size, step), x.unfold(-1, size, step)))
    return cases
