"""tensor_bytes: the bytes a tensor holds (its elements times their size), summed over nested lists and tuples;
FakeTensors count as real ones; anything else counts 0."""

from __future__ import annotations

import pytest
import torch
from torch._subclasses.fake_tensor import FakeTensorMode

from workshop.foundations.tensor_bytes import tensor_bytes


def numel_only(value) -> int:
    """Planted: counts elements, not bytes."""
    if isinstance(value, torch.Tensor):
        return value.numel()
    return sum(numel_only(v) for v in value) if isinstance(value, (list, tuple)) else 0


def flat_only(value) -> int:
    """Planted: counts a list's tensors but not those of a list inside it."""
    if isinstance(value, torch.Tensor):
        return value.numel() * value.element_size()
    items = value if isinstance(value, (list, tuple)) else []
    return sum(v.numel() * v.element_size() for v in items if isinstance(v, torch.Tensor))


CASES = [
    (torch.zeros(64, 600), 64 * 600 * 4),  # the LM head's weight, float32
    (torch.zeros(3, dtype=torch.float64), 24),
    ([torch.zeros(2, dtype=torch.float16), (torch.zeros(4, dtype=torch.int8), "name")], 8),
    ([None, 3, "x"], 0),
]


def counts_right(count) -> bool:
    return all(count(value) == expected for value, expected in CASES)


def test_bytes_of_tensors_and_nested_lists():
    assert counts_right(tensor_bytes)


@pytest.mark.parametrize("planted", [numel_only, flat_only])
def test_the_cases_catch_a_wrong_count(planted):
    assert not counts_right(planted)


def test_a_fake_tensor_counts_its_bytes_without_storage():
    with FakeTensorMode():
        fake = torch.empty(8, 600, dtype=torch.bfloat16)
    assert tensor_bytes([fake, fake]) == 2 * 8 * 600 * 2
