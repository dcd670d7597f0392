import pytest
import torch

from workshop import atomic
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
    with pytest.raises(CheckpointError, match="is not a workshop-minigpt/1 checkpoint"):
        checkpoint.load(tmp_path / "other.pt")
