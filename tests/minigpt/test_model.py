import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from workshop.minigpt.data import train_tensors
from workshop.minigpt.model import GPT
from workshop.minigpt.train import TrainArgs, train


def test_shapes_and_lm_head():
    model = GPT()
    assert isinstance(model.lm_head, nn.Linear)
    assert (model.lm_head.in_features, model.lm_head.out_features) == (64, 600)
    assert model.lm_head.bias is not None
    assert model.cfg.n_layer >= 4 and model.cfg.n_head % 4 == 0
    idx = torch.randint(0, 600, (3, 17))
    assert model(idx).shape == (3, 17, 600)
    assert model.hidden_states(idx).shape == (3, 17, 64)


def test_context_length_is_enforced():
    model = GPT()
    try:
        model(torch.zeros(1, model.cfg.block_size + 1, dtype=torch.long))
    except ValueError as e:
        assert "context length" in str(e)
    else:
        raise AssertionError("a too-long sequence must be refused")


def test_swapping_the_softmax_changes_nothing_when_it_is_the_same_function():
    model = GPT().eval()
    idx = torch.randint(0, 600, (2, 9))
    ref = model(idx)

    def by_hand(scores, dim):
        e = torch.exp(scores - scores.amax(dim, keepdim=True))  # -inf (masked) -> 0
        return e / e.sum(dim, keepdim=True)

    model.use_softmax(by_hand)
    torch.testing.assert_close(model(idx), ref)
    model.use_softmax(F.softmax)


def test_right_padding_does_not_change_real_positions():
    model = GPT().eval()
    idx = torch.randint(3, 600, (1, 8))
    padded = torch.cat([idx, torch.zeros(1, 5, dtype=torch.long)], dim=1)
    torch.testing.assert_close(model(padded)[:, :8], model(idx))


def test_training_is_deterministic_bit_for_bit():
    args = TrainArgs(steps=5)
    m1, h1 = train(args)
    m2, h2 = train(args)
    assert h1 == h2
    for (n, a), b in zip(m1.state_dict().items(), m2.state_dict().values(), strict=True):
        assert torch.equal(a, b), n


def test_training_data_targets_are_next_tokens():
    x, y = train_tensors(n_sentences=10)  # (10, 22) each
    real = x[:, 1:] != 0  # positions holding a real input token
    assert torch.equal(x[:, 1:][real], y[:, :-1][real])


@pytest.mark.gpu
def test_cuda_logits_match_cpu():
    from workshop.minigpt import checkpoint

    model = checkpoint.load()
    idx = torch.randint(3, 600, (4, 20))
    ref = model(idx)
    allow = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False  # TF32 would put fp32 logits ~1e-3 off
    try:
        got = model.to("cuda")(idx.cuda()).cpu()
    finally:
        torch.backends.cuda.matmul.allow_tf32 = allow
    torch.testing.assert_close(got, ref, atol=1e-4, rtol=1e-4)
