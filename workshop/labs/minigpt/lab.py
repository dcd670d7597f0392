"""Lab minigpt: the model every other lab takes apart. Load it, check it, measure it, look at it.

Three sections, each callable on its own (the tests run them one at a time with a planted bug): the model's
shape, its prompt accuracy against the grammar's oracle (and the oracle's power to tell a guess from a model),
and the replay of the checkpoint's first training steps.
"""

from __future__ import annotations

import random
import statistics

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import torch

from workshop.i18n import _
from workshop.lab_api import LabContext
from workshop.minigpt import checkpoint, grammar
from workshop.minigpt.data import held_out_prompts
from workshop.minigpt.evaluate import prompt_accuracy
from workshop.minigpt.grammar import VOCAB, UngrammaticalPrefix, decode, parse
from workshop.minigpt.train import TrainArgs, train

REPLAY_STEPS = 30  # steps of training replayed from the seed, compared with the stored loss curve
EOS_ID = VOCAB.index["<eos>"]
# A uniformly random next token is grammatical for 20% of the held-out prompts (the oracle allows 1 to 360 of
# the 600 tokens); an oracle that allowed every token would score such a guess 100%, and any model with it.
MAX_GUESS_ACCURACY = 0.5


@torch.no_grad()
def sample_sentences(model, n: int, seed: int, device: str) -> list[list[int]]:
    """Sample n sentences from <bos> at temperature 1 (the model's own distribution)."""
    gen = torch.Generator(device=device).manual_seed(seed)
    x = torch.full((n, 1), VOCAB.index["<bos>"], dtype=torch.long, device=device)  # (n, 1)
    while x.shape[1] < model.cfg.block_size:
        probs = torch.softmax(model(x)[:, -1], dim=-1)  # (n, V)
        x = torch.cat([x, torch.multinomial(probs, 1, generator=gen)], dim=1)
    return [row[: row.index(EOS_ID) + 1] if EOS_ID in row else row for row in x.tolist()]


def is_grammatical(ids: list[int]) -> bool:
    try:
        return ids[-1] == EOS_ID and parse(ids).phase == "done"
    except UngrammaticalPrefix:
        return False


def check_model(ctx: LabContext, model) -> None:
    head = model.lm_head
    ctx.check_equal(_("vocabulary size"), len(VOCAB), 600)
    ctx.check_equal(
        _("lm_head is nn.Linear(64, 600) with bias"),
        [type(head).__name__, head.in_features, head.out_features, head.bias is not None],
        ["Linear", 64, 600, True],
    )


def check_accuracy(ctx: LabContext, model, prompts: list[list[int]]) -> dict:
    """The model's top-1 accuracy on the prompts, and a uniform guess's under the same oracle."""
    acc = prompt_accuracy(model, prompts)
    ctx.check_min(_("prompt prediction accuracy (top-1 grammatical)"), acc["accuracy"], 0.98)
    guess = statistics.mean(len(grammar.grammatical_next_tokens(p)) / len(VOCAB) for p in prompts)
    ctx.check_max(
        _("accuracy of a uniformly random next token (the oracle tells a guess from a model)"),
        guess,
        MAX_GUESS_ACCURACY,
        message=_("the grammar's oracle allows too many next tokens to grade anything"),
    )
    return {**acc, "guess_accuracy": guess}


def check_replay(ctx: LabContext, raw: dict, steps: int) -> tuple[dict, float]:
    """The shipped curve must be what its command makes: replay the first steps from the seed on the CPU."""
    stored = raw["history"]["loss"][:steps]
    what = _("replaying the first training steps")
    _model, replay = train(
        TrainArgs(**raw["train_args"]),
        device="cpu",
        stop_after=steps,
        on_step=lambda step, _loss: ctx.step(what, step + 1, steps),
    )
    drift = max(abs(a - b) for a, b in zip(stored, replay["loss"], strict=True))
    ctx.check_max(
        _("replayed first {steps} training losses match the checkpoint's").format(steps=steps),
        drift,
        1e-4,
    )
    return replay, drift


def run(ctx: LabContext) -> None:
    raw = checkpoint.load_raw()
    model = checkpoint.load(ctx.options.checkpoint, device=ctx.options.device)
    check_model(ctx, model)
    prompts = held_out_prompts()
    acc = check_accuracy(ctx, model, prompts)
    replay, drift = check_replay(ctx, raw, REPLAY_STEPS)
    samples = sample_sentences(model, 200, ctx.options.seed, ctx.options.device)
    grammatical = sum(map(is_grammatical, samples)) / len(samples)
    _plot_loss(ctx, raw["history"], replay)
    _plot_accuracy(ctx, acc["by_position"])
    ctx.write_json(
        "prompt_errors.json",
        [
            {**e, "prompt": decode(e["prompt"]), "predicted": VOCAB.tokens[e["predicted"]]}
            for e in acc["errors"]
        ],
    )
    parameters = sum(p.numel() for p in model.parameters())
    ctx.extra.update(
        prompt_accuracy=acc["accuracy"],
        guess_accuracy=acc["guess_accuracy"],
        by_position=acc["by_position"],
        sampled_grammatical=grammatical,
        parameters=parameters,
        config=raw["config"],
        train_args=raw["train_args"],
    )
    ctx.render_summary(
        parameters=parameters,
        config=raw["config"],
        prompts=len(prompts),
        accuracy=acc["accuracy"],
        guess_accuracy=acc["guess_accuracy"],
        wrong=len(acc["errors"]),
        example=decode(random.Random(ctx.options.seed).choice(prompts)),
        grammatical=grammatical,
        samples=[(is_grammatical(s), decode(s)) for s in samples[:8]],
        n_samples=len(samples),
        train_steps=raw["train_args"]["steps"],
        final_loss=raw["history"]["loss"][-1],
        replay_steps=REPLAY_STEPS,
        drift=drift,
    )


def _plot_loss(ctx: LabContext, history: dict, replay: dict) -> None:
    fig, ax = plt.subplots(figsize=(7, 3.5))
    ax.plot(history["step"], history["loss"], lw=0.8, label=_("shipped checkpoint's training"))
    ax.plot(replay["step"], replay["loss"], "o", ms=3, label=_("replayed from the seed (this run)"))
    ax.set(
        xlabel=_("step"),
        ylabel=_("cross-entropy (nats)"),
        title=_("MiniGPT training loss"),
        yscale="log",
    )
    ax.legend()
    ctx.save_figure("loss_curve.png", fig)


def _plot_accuracy(ctx: LabContext, by_position: dict) -> None:
    kinds = list(by_position)
    fig, ax = plt.subplots(figsize=(7, 0.3 * len(kinds) + 1))
    ax.barh(kinds, [c / t for c, t in by_position.values()])
    for i, (c, t) in enumerate(by_position.values()):
        ax.text(1.0, i, f" {c}/{t}", va="center", fontsize=8)
    ax.set(
        xlim=(0, 1.12),
        xlabel=_("top-1 next token grammatical"),
        title=_("Prompt accuracy by where the prompt stops"),
    )
    ax.invert_yaxis()
    ctx.save_figure("accuracy_by_position.png", fig)
