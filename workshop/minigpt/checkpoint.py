"""Save and load the MiniGPT. Loading refuses a checkpoint made for another vocabulary or other shapes.

Two kinds of file load:
- the workshop's own (`python -m workshop train`): a dict with format, config, vocab, state_dict, history;
- a learner's MiniGPT: a plain state dict of this architecture (`torch.save(model.state_dict(), PATH)`; vocabulary
  600, d_model 64, the parameter names of model.py), given to the labs with `--checkpoint PATH`.
Either is loaded with torch.load(weights_only=True): tensors, numbers, strings and lists only, so loading runs
no pickled code. Every failure is one CheckpointError that names the file, what is wrong, and the fix.
"""

from __future__ import annotations

import os
from dataclasses import asdict, fields
from pathlib import Path

import torch

from workshop.foundations import atomic
from workshop.i18n import _
from workshop.minigpt import CHECKPOINT_ENVIRONMENT as ENVIRONMENT
from workshop.minigpt import SHIPPED_CHECKPOINT as SHIPPED
from workshop.minigpt.grammar import VOCAB
from workshop.minigpt.model import GPT, GPTConfig

FORMAT = "workshop-minigpt/1"
WRAPPER_PREFIXES = ("module.", "_orig_mod.")  # DDP's and torch.compile's names around a model's own


class CheckpointError(ValueError):
    pass


def from_environment() -> Path | None:
    """The --checkpoint of the lab that started this process; None: the shipped one."""
    value = os.environ.get(ENVIRONMENT)
    return Path(value) if value else None


def save(path: str | Path, model: GPT, history: dict, train_args: dict) -> Path:
    return atomic.save_torch(
        path,
        {
            "format": FORMAT,
            "config": asdict(model.cfg),
            "vocab": list(VOCAB.tokens),
            "state_dict": model.state_dict(),
            "history": history,
            "train_args": train_args,
        },
    )


def _fix(path: Path) -> str:
    if path.resolve() == SHIPPED.resolve():
        return _(
            "restore the shipped one: `git checkout workshop/minigpt/minigpt.pt`, or retrain it: "
            "`python -m workshop train --out workshop/minigpt/minigpt.pt --force`"
        )
    return _(
        "pass a checkpoint made by `python -m workshop train --out {path}`, or a state dict of this MiniGPT "
        "saved with `torch.save(model.state_dict(), {path})`"
    ).format(path=path)


def _error(path: Path, problem: str) -> CheckpointError:
    return CheckpointError(
        _("{path}: {problem}; {fix}").format(path=path, problem=problem, fix=_fix(path))
    )


def _read(path: Path):
    if path.is_dir():
        raise _error(path, _("is a folder, not a checkpoint file"))
    if not path.is_file():
        raise CheckpointError(
            _(
                "no checkpoint at {path}; make one with `python -m workshop train --out {path}`"
            ).format(path=path)
        )
    if path.stat().st_size == 0:
        raise _error(path, _("the file is empty"))
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:  # EOFError, RuntimeError, UnpicklingError: it depends on the damage
        # Never torch's own advice (load with weights_only=False): that would run whatever code the file holds.
        if "allowed global" in str(e):
            problem = _("it holds Python objects other than tensors, numbers and strings")
        else:
            problem = _("it is truncated or not a torch.save file ({error})").format(
                error=type(e).__name__
            )
        raise _error(path, problem) from None


def load_raw(path: str | Path | None = None) -> dict:
    """The file as a workshop checkpoint: {format, config, vocab, state_dict, ...}; a plain state dict is
    wrapped as one with the default config and this grammar's vocabulary."""
    path = Path(path or SHIPPED)
    ckpt = _read(path)
    if isinstance(ckpt, dict) and ckpt and all(isinstance(v, torch.Tensor) for v in ckpt.values()):
        return {
            "format": FORMAT,
            "config": asdict(GPTConfig()),
            "vocab": list(VOCAB.tokens),
            "state_dict": ckpt,
        }
    if not isinstance(ckpt, dict) or ckpt.get("format") != FORMAT:
        raise _error(
            path,
            _("it is neither a {format} checkpoint nor a state dict of tensors").format(
                format=FORMAT
            ),
        )
    missing = [k for k in ("config", "vocab", "state_dict") if k not in ckpt]
    if missing:
        raise _error(path, _("it has no {keys}").format(keys=", ".join(missing)))
    _check_config(path, ckpt["config"])
    _check_vocab(path, list(ckpt["vocab"]))
    return ckpt


def _check_config(path: Path, config) -> None:
    expected = asdict(GPTConfig())
    if not isinstance(config, dict):
        raise _error(path, _("its config is not a mapping"))
    unknown = sorted(set(config) - set(expected))
    missing = sorted(set(expected) - set(config))
    if unknown or missing:
        raise _error(
            path,
            _(
                "its config does not describe this MiniGPT (unknown keys {unknown}, missing keys {missing})"
            ).format(unknown=unknown, missing=missing),
        )
    for f in fields(GPTConfig):
        if config[f.name] != expected[f.name]:
            raise _error(
                path,
                _("its config has {key} = {found}, this MiniGPT has {expected}").format(
                    key=f.name, found=config[f.name], expected=expected[f.name]
                ),
            )


def _check_vocab(path: Path, vocab: list) -> None:
    if vocab == list(VOCAB.tokens):
        return
    if len(vocab) != len(VOCAB):
        detail = _("it has {n} tokens, the grammar has {m}").format(n=len(vocab), m=len(VOCAB))
    else:
        i = next(i for i, (a, b) in enumerate(zip(vocab, VOCAB.tokens, strict=True)) if a != b)
        detail = _("token {i} is {there!r} there and {here!r} here").format(
            i=i, there=vocab[i], here=VOCAB.tokens[i]
        )
    raise _error(path, _("it was trained on another vocabulary: {detail}").format(detail=detail))


def _unwrapped(state_dict: dict) -> dict:
    """The model's own names, without the prefix a DDP or torch.compile wrapper puts on every key."""
    for prefix in WRAPPER_PREFIXES:
        if state_dict and all(k.startswith(prefix) for k in state_dict):
            return {k[len(prefix) :]: v for k, v in state_dict.items()}
    return state_dict


def load(path: str | Path | None = None, device: str | torch.device = "cpu") -> GPT:
    """The MiniGPT from `path` (None: the shipped minigpt.pt), in eval mode on `device`."""
    path = Path(path or SHIPPED)
    ckpt = load_raw(path)
    model = GPT(GPTConfig())
    expected = model.state_dict()
    got = _unwrapped(ckpt["state_dict"])
    missing, extra = sorted(set(expected) - set(got)), sorted(set(got) - set(expected))
    if missing or extra:
        raise _error(
            path,
            _(
                "its parameter names differ from the MiniGPT's (missing {missing}, unexpected {extra})"
            ).format(
                missing=missing[:5] + ["..."] * (len(missing) > 5),
                extra=extra[:5] + ["..."] * (len(extra) > 5),
            ),
        )
    for name, tensor in got.items():
        if tensor.shape != expected[name].shape:
            raise _error(
                path,
                _(
                    "{key} has shape {found}, the MiniGPT (vocabulary {v}, d_model {d}) expects {expected}"
                ).format(
                    key=name,
                    found=tuple(tensor.shape),
                    v=model.cfg.vocab_size,
                    d=model.cfg.d_model,
                    expected=tuple(expected[name].shape),
                ),
            )
    model.load_state_dict(got)
    return model.to(device).eval()
