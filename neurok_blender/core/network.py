"""Transformer pieces of the NeuROK model: Fourier point features, attention, Perceiver encoder.

The dynamics differentiate the decoder twice in forward mode (nested jvp), so every piece here must
have correct second forward derivatives. Two torch kernels do not (torch 2.13, CPU): the fused
scaled_dot_product_attention has no forward-mode derivative, so attention is written out as
softmax(q k^T / sqrt(d)) v; and nn.LayerNorm's jvp-of-jvp is wrong (docs/physics.md), so
``LayerNorm`` below is written with elementwise operations.
"""

import math

import torch
from torch import nn


class FourierFeatures(nn.Module):
    """x -> (x, sin(2^k pi x), cos(2^k pi x)) for k < frequencies, per coordinate (3DShape2VecSet)."""

    def __init__(self, frequencies: int):
        super().__init__()
        self.register_buffer("scales", (2.0 ** torch.arange(frequencies)) * math.pi, persistent=False)

    def forward(self, x):
        angles = (x[..., None] * self.scales).flatten(-2)
        return torch.cat([x, torch.sin(angles), torch.cos(angles)], -1)

    def width(self, dims: int) -> int:
        return dims * (1 + 2 * len(self.scales))


class LayerNorm(nn.Module):
    """(x - mean) / sqrt(var + eps) * weight + bias over the last dimension; nn.LayerNorm's parameters
    (same names, so checkpoints load either way) and second forward derivatives that are right."""

    def __init__(self, width: int, eps: float = 1e-5):
        super().__init__()
        self.eps = eps
        self.weight, self.bias = nn.Parameter(torch.ones(width)), nn.Parameter(torch.zeros(width))

    def forward(self, x):
        centred = x - x.mean(-1, keepdim=True)
        return centred * torch.rsqrt((centred * centred).mean(-1, keepdim=True) + self.eps) * self.weight + self.bias


class Attention(nn.Module):
    def __init__(self, width: int, heads: int):
        super().__init__()
        self.heads = heads
        self.query, self.key_value = nn.Linear(width, width), nn.Linear(width, 2 * width)
        self.out = nn.Linear(width, width)

    def forward(self, x, context):
        h, d = self.heads, x.shape[-1] // self.heads
        q = self.query(x).unflatten(-1, (h, d)).transpose(-2, -3)  # (..., h, n, d)
        k, v = self.key_value(context).unflatten(-1, (2, h, d)).unbind(-3)
        k, v = k.transpose(-2, -3), v.transpose(-2, -3)
        weights = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(d), dim=-1)
        return self.out((weights @ v).transpose(-2, -3).flatten(-2))  # batch shapes of x and context broadcast


class Block(nn.Module):
    """Pre-norm transformer block: attention to a context (itself when None), then an MLP."""

    def __init__(self, width: int, heads: int):
        super().__init__()
        self.norm, self.context_norm, self.mlp_norm = LayerNorm(width), LayerNorm(width), LayerNorm(width)
        self.attention = Attention(width, heads)
        self.mlp = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(), nn.Linear(4 * width, width))

    def forward(self, x, context=None):
        y = self.norm(x)
        x = x + self.attention(y, y if context is None else self.context_norm(context))
        return x + self.mlp(self.mlp_norm(x))


class PerceiverEncoder(nn.Module):
    """Learnable latent tokens read a point set by cross-attention, then think by self-attention."""

    def __init__(self, in_features: int, width: int, heads: int, tokens: int, depth: int):
        super().__init__()
        self.tokens = nn.Parameter(torch.randn(tokens, width) * 0.02)
        self.embed = nn.Linear(in_features, width)
        self.read = Block(width, heads)
        self.think = nn.ModuleList(Block(width, heads) for _ in range(depth))

    def forward(self, features):
        points = self.embed(features)
        x = self.read(self.tokens.expand(*points.shape[:-2], *self.tokens.shape), points)
        for block in self.think:
            x = block(x)
        return x
