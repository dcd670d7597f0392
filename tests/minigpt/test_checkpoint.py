import pytest
import torch

from workshop.foundations import atomic
from workshop.minigpt import checkpoint
from workshop.minigpt.checkpoint import CheckpointError


def test_shipped_checkpoint_loads_with_weights_only():
    raw = torch.load(checkpoint.SHIPPED, weights_only=True)
    assert raw["format"] == checkpoint.FORMAT
    model = checkpoint.load()
    assert model.lm_head.weight.shape == (600, 64)
    assert raw["history"]["loss"][-1] < raw["history"]["loss"][0]


def _tampered(tmp_path, change):
    raw = checkpoint.load_raw()
    change(raw)
    return atomic.save_torch(tmp_path / "bad.pt", raw)


def test_another_vocabulary_is_refused(tmp_path):
    path = _tampered(tmp_path, lambda raw: raw.update(vocab=raw["vocab"][:500]))
    with pytest.raises(
        CheckpointError, match="another vocabulary: it has 500 tokens, the grammar has 600"
    ):
        checkpoint.load(path)


def test_a_reordered_vocabulary_is_refused(tmp_path):
    def swap(raw):
        raw["vocab"][10], raw["vocab"][11] = raw["vocab"][11], raw["vocab"][10]

    with pytest.raises(CheckpointError, match="token 10 is"):
        checkpoint.load(_tampered(tmp_path, swap))


def test_wrong_shapes_are_refused(tmp_path):
    def shrink(raw):
        raw["state_dict"]["lm_head.weight"] = torch.zeros(600, 32)

    with pytest.raises(CheckpointError, match=r"lm_head.weight has shape \(600, 32\).*\(600, 64\)"):
        checkpoint.load(_tampered(tmp_path, shrink))


def test_missing_and_foreign_files_are_clear_errors(tmp_path):
    with pytest.raises(CheckpointError, match="no checkpoint at .*python -m workshop train"):
        checkpoint.load(tmp_path / "nothing.pt")
    torch.save({"weights": torch.zeros(1)}, tmp_path / "other.pt")
    with pytest.raises(CheckpointError, match=r"parameter names differ .*missing \['blocks"):
        checkpoint.load(tmp_path / "other.pt")
    torch.save({"weights": [1, 2]}, tmp_path / "foreign.pt")
    with pytest.raises(
        CheckpointError, match="neither a workshop-minigpt/1 checkpoint nor a state dict"
    ):
        checkpoint.load(tmp_path / "foreign.pt")


FIXES = r"(git checkout workshop/minigpt/minigpt.pt|python -m workshop train)"


@pytest.mark.parametrize(
    "damage, problem",
    [
        (lambda raw: b"", "the file is empty"),
        (lambda raw: raw[: len(raw) // 2], "it is truncated or not a torch.save file"),
        (lambda raw: b"\x00garbage" * 100, "it is truncated or not a torch.save file"),
    ],
    ids=["empty", "truncated", "garbage"],
)
def test_a_damaged_file_is_one_error_naming_it_and_the_fix(tmp_path, damage, problem):
    path = tmp_path / "minigpt.pt"
    path.write_bytes(damage(checkpoint.SHIPPED.read_bytes()))
    with pytest.raises(CheckpointError, match=f"{path}: {problem}.*{FIXES}"):
        checkpoint.load(path)


def test_pickled_code_is_refused_without_torchs_weights_only_false_advice(tmp_path):
    torch.save({"format": checkpoint.FORMAT, "config": object()}, tmp_path / "code.pt")
    with pytest.raises(CheckpointError) as e:
        checkpoint.load(tmp_path / "code.pt")
    assert "Python objects other than tensors" in str(e.value)
    assert "weights_only=False" not in str(e.value)


@pytest.mark.parametrize(
    "change, problem",
    [
        (lambda raw: raw["config"].update(colour=1), r"unknown keys \['colour'\]"),
        (lambda raw: raw["config"].pop("n_head"), r"missing keys \['n_head'\]"),
        (lambda raw: raw["config"].update(n_layer=2), "n_layer = 2, this MiniGPT has 4"),
        (lambda raw: raw.pop("state_dict"), "it has no state_dict"),
    ],
    ids=["unknown config key", "missing config key", "other config", "no state dict"],
)
def test_a_checkpoint_of_another_model_is_refused(tmp_path, change, problem):
    with pytest.raises(CheckpointError, match=problem):
        checkpoint.load(_tampered(tmp_path, change))


def test_a_learners_plain_state_dict_loads_and_a_mismatch_names_key_and_shapes(tmp_path):
    """--checkpoint: the learner's own MiniGPT, saved as torch.save(model.state_dict(), PATH)."""
    state = checkpoint.load().state_dict()
    state["lm_head.bias"] = state["lm_head.bias"] + 1.0  # a model of its own
    torch.save(state, tmp_path / "mine.pt")
    model = checkpoint.load(tmp_path / "mine.pt")
    assert torch.equal(model.lm_head.bias, state["lm_head.bias"])
    torch.save({"module." + k: v for k, v in state.items()}, tmp_path / "ddp.pt")
    assert torch.equal(checkpoint.load(tmp_path / "ddp.pt").lm_head.bias, state["lm_head.bias"])

    state["tok_emb.weight"] = torch.zeros(500, 64)  # another vocabulary
    torch.save(state, tmp_path / "other_vocab.pt")
    with pytest.raises(
        CheckpointError, match=r"tok_emb.weight has shape \(500, 64\), .*expects \(600, 64\)"
    ):
        checkpoint.load(tmp_path / "other_vocab.pt")


def test_a_folder_is_not_a_checkpoint(tmp_path):
    with pytest.raises(CheckpointError, match="is a folder"):
        checkpoint.load(tmp_path)
