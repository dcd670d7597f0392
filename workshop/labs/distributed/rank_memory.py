"""What a rank holds in memory: the local part of a (possibly sharded) tensor, the bytes of the storages behind
its tensors, and a digest of its parameters that tells replicas apart."""

from __future__ import annotations

import hashlib

import torch


def local(t: torch.Tensor) -> torch.Tensor:
    """The part of a (possibly sharded) tensor that lives on this rank."""
    return t.to_local() if hasattr(t, "to_local") else t


def full(t: torch.Tensor) -> torch.Tensor:
    """The whole tensor (a collective for a DTensor: every rank must call it)."""
    return t.full_tensor() if hasattr(t, "full_tensor") else t


def storage_bytes(tensors) -> int:
    """Bytes of the distinct storages behind these tensors (a DTensor's: its local shard's), views counted once:
    the memory they occupy on this rank, padding included."""
    storages = {}
    for t in tensors:
        if t is not None:
            storage = local(t).untyped_storage()
            storages[storage.data_ptr()] = storage.nbytes()
    return sum(storages.values())


def held(params: list[torch.Tensor], opt: torch.optim.Optimizer) -> dict[str, int]:
    """Bytes this rank holds for parameters, gradients and optimizer state (SGD: momentum buffers)."""
    state = [v for s in opt.state.values() for v in s.values() if isinstance(v, torch.Tensor)]
    return {
        "params": storage_bytes(params),
        "grads": storage_bytes(p.grad for p in params),
        "optimizer": storage_bytes(state),
    }


def digest(params: dict[str, torch.Tensor]) -> str:
    """A hash of the tensors' names and bytes: two ranks holding the same replica have the same digest."""
    h = hashlib.sha256()
    for name in sorted(params):
        h.update(name.encode())
        h.update(
            params[name].detach().cpu().contiguous().view(-1).view(torch.uint8).numpy().tobytes()
        )
    return h.hexdigest()[:16]
