"""The grammar MiniGPT: a small pre-norm GPT whose LM head is exactly nn.Linear(64, 600).

Sizes (GPTConfig): d_model 64, 4 blocks, 4 heads of 16 (heads divisible by 4, so tensor parallel can split
them 2 or 4 ways), MLP 256, context 32 (the longest sentence is 23 tokens). About 240k parameters.
Attention is written out (no fused SDPA) so every op is visible to the dispatcher and autograd labs, and its
softmax is a swappable function so the custom_op lab can drop in its Triton softmax.
Shapes: B batch, T time, C = d_model, H heads (on this rank), D = head dim, V = vocab.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

from workshop.i18n import _
from workshop.minigpt.grammar import VOCAB, VOCAB_SIZE

PAD_ID = VOCAB.index["<pad>"]


@dataclass(frozen=True)
class GPTConfig:
    vocab_size: int = VOCAB_SIZE
    block_size: int = 32
    n_layer: int = 4
    n_head: int = 4
    d_model: int = 64
    d_mlp: int = 256

    @property
    def head_dim(self) -> int:
        return self.d_model // self.n_head


class CausalSelfAttention(nn.Module):
    def __init__(self, cfg: GPTConfig):
        super().__init__()
        self.head_dim = cfg.head_dim
        # Separate q/k/v projections: tensor parallel shards each column-wise, out_proj row-wise.
        self.q_proj = nn.Linear(cfg.d_model, cfg.d_model)
        self.k_proj = nn.Linear(cfg.d_model, cfg.d_model)
        self.v_proj = nn.Linear(cfg.d_model, cfg.d_model)
        self.out_proj = nn.Linear(cfg.d_model, cfg.d_model)
        self.softmax = F.softmax  # any fn(scores, dim) -> probabilities; see GPT.use_softmax
        causal = torch.tril(torch.ones(cfg.block_size, cfg.block_size, dtype=torch.bool))
        self.register_buffer("causal", causal, persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, _ = x.shape
        # (B, T, C) -> (B, H, T, D); H is inferred so a rank holding a slice of the heads works unchanged.
        q = self.q_proj(x).view(B, T, -1, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(B, T, -1, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(B, T, -1, self.head_dim).transpose(1, 2)
        scores = (q @ k.transpose(-2, -1)) * self.head_dim**-0.5  # (B, H, T, T)
        scores = scores.masked_fill(~self.causal[:T, :T], float("-inf"))
        att = self.softmax(scores, dim=-1)  # (B, H, T, T), rows sum to 1
        y = (att @ v).transpose(1, 2).reshape(B, T, -1)  # (B, H, T, D) -> (B, T, H*D)
        return self.out_proj(y)


class MLP(nn.Module):
    def __init__(self, cfg: GPTConfig):
        super().__init__()
        self.fc = nn.Linear(cfg.d_model, cfg.d_mlp)
        self.proj = nn.Linear(cfg.d_mlp, cfg.d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.proj(F.gelu(self.fc(x)))  # (B, T, C) -> (B, T, 4C) -> (B, T, C)


class Block(nn.Module):
    def __init__(self, cfg: GPTConfig):
        super().__init__()
        self.ln1 = nn.LayerNorm(cfg.d_model)
        self.attn = CausalSelfAttention(cfg)
        self.ln2 = nn.LayerNorm(cfg.d_model)
        self.mlp = MLP(cfg)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    def __init__(self, cfg: GPTConfig = GPTConfig()):
        super().__init__()
        self.cfg = cfg
        self.tok_emb = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.pos_emb = nn.Embedding(cfg.block_size, cfg.d_model)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layer))
        self.ln_f = nn.LayerNorm(cfg.d_model)
        self.lm_head = nn.Linear(
            cfg.d_model, cfg.vocab_size
        )  # the operator this workshop takes apart
        self.apply(self._init_weights)

    @staticmethod
    def _init_weights(module: nn.Module) -> None:
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
        if isinstance(module, nn.Linear):
            nn.init.zeros_(module.bias)

    def use_softmax(self, softmax) -> None:
        """Swap the attention softmax in every block, e.g. for workshop.ops.softmax."""
        for block in self.blocks:
            block.attn.softmax = softmax

    def hidden_states(self, idx: torch.Tensor) -> torch.Tensor:
        """(B, T) token ids -> (B, T, C): the input of lm_head."""
        T = idx.shape[1]
        if self.cfg.block_size < T:
            raise ValueError(
                _("sequence length {T} exceeds the context length {block_size}").format(
                    T=T, block_size=self.cfg.block_size
                )
            )
        pos = torch.arange(T, device=idx.device)
        x = self.tok_emb(idx) + self.pos_emb(pos)  # (B, T, C)
        for block in self.blocks:
            x = block(x)
        return self.ln_f(x)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        """(B, T) token ids -> (B, T, V) logits."""
        return self.lm_head(self.hidden_states(idx))


def lm_loss(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy over the non-padding targets. logits (B, T, V), targets (B, T)."""
    return F.cross_entropy(logits.flatten(0, 1), targets.flatten(), ignore_index=PAD_ID)
