"""minigpt.train: the learning rate warms up linearly then decays by a cosine to a tenth of its peak; training is
deterministic (same seed, same losses), so the shipped checkpoint can be made again."""

from __future__ import annotations

import pytest

from workshop.minigpt import train
from workshop.minigpt.train import TrainArgs

ARGS = TrainArgs(steps=1000, warmup=100, lr=1e-3)


def no_warmup(step: int, args: TrainArgs) -> float:
    """Planted: the peak from the first step."""
    return args.lr


def schedule_is_right(lr_at) -> bool:
    return (
        lr_at(0, ARGS) == pytest.approx(1e-5)
        and lr_at(99, ARGS) == pytest.approx(1e-3)
        and lr_at(999, ARGS) == pytest.approx(1e-4, rel=1e-3)
        and lr_at(100, ARGS) > lr_at(500, ARGS) > lr_at(999, ARGS)
    )


def test_the_schedule_warms_up_then_decays_to_a_tenth():
    assert schedule_is_right(train.lr_at)
    assert not schedule_is_right(no_warmup)


def test_two_runs_of_the_same_seed_give_the_same_losses():
    args = TrainArgs(steps=3, batch_size=8)
    _, first = train.train(args)
    model, second = train.train(args)
    assert first == second and first["step"] == [0, 1, 2]
    assert not model.training and train.train_args_dict(args)["batch_size"] == 8
