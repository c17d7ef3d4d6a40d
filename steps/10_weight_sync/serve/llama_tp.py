"""llama_tp.py: a small Llama-shaped decoder whose tensors are step 10's (model.c), and its forward pass whole or tensor-parallel over a replica's ranks, as Megatron-LM splits it.

Step 10's model is Llama-3 8B's tensors scaled by D / 4096 (D = --model-dim): the
embedding and lm_head of 501 x D / 16 rows, per layer q_proj [D, D], k_proj and
v_proj [D / 4, D], o_proj [D, D], gate_proj and up_proj [3.5 D, D], down_proj
[D, 3.5 D], two RMSNorm vectors, and a final one.  The attention here has heads of
D / 8: 8 query heads and 2 key-value heads (Llama-3 8B's 4 query heads a KV head),
so a replica of --tp 2 gives each rank 4 query heads and their KV head whole.

One forward serves both: with P = 1 it is the whole model (the trainers'); with a
replica's group it is rank R's part, each weight its slice of step 10's layout:
  column split (q, k, v, gate, up, embed_tokens, lm_head): rank R's rows of the
    weight, so its output features: a matmul that needs no input from its peers;
  row split (o_proj, down_proj): rank R's columns, so it takes the column split's
    output as it lies, and one all-reduce sums the ranks' partial outputs;
  the norms replicated.
The embedding's rows are vocabulary entries: each rank looks up the tokens in its
range and adds zeros for the others, and an all-reduce makes every rank's whole.
lm_head's rows likewise: each rank's logits for its vocabulary range, all-gathered.
"""
import math

import torch
import torch.distributed as dist
import torch.nn.functional as F


def shapes(dim, layers):
    """Step 10's tensors in model.c's order: (name, rows, cols), names as PyTorch's Llama without '.weight'."""
    kv, ffn, vocab = dim // 4, dim * 7 // 2, dim * 501 // 16
    out = [("embed_tokens", vocab, dim)]
    for l in range(layers):
        p = f"layers.{l}."
        out += [(p + "input_layernorm", 1, dim), (p + "self_attn.q_proj", dim, dim),
                (p + "self_attn.k_proj", kv, dim), (p + "self_attn.v_proj", kv, dim),
                (p + "self_attn.o_proj", dim, dim), (p + "post_attention_layernorm", 1, dim),
                (p + "mlp.gate_proj", ffn, dim), (p + "mlp.up_proj", ffn, dim),
                (p + "mlp.down_proj", dim, ffn)]
    return out + [("norm", 1, dim), ("lm_head", vocab, dim)]


HEADS, KV_HEADS = 8, 2


def check_tp(tp):
    """A replica's ranks must split the KV heads whole: --tp 1 or 2 here."""
    if KV_HEADS % tp:
        raise ValueError(f"--tp {tp}: the model's {KV_HEADS} KV heads do not split over {tp} ranks; use --tp 1 or 2")


def init_weights(dim, layers, seed):
    """The trainers' starting weights, the same on every trainer: N(0, 0.02), the norms 1."""
    g = torch.Generator().manual_seed(seed)
    w = {}
    for name, rows, cols in shapes(dim, layers):
        w[name] = torch.ones(rows, cols) if rows == 1 else torch.randn(rows, cols, generator=g) * 0.02
    return w


def rms_norm(x, w):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5) * w.view(-1)


def rope(x):
    """Rotary position embedding on [B, S, H, hd]: each pair of features turned by its position's angle."""
    s, hd = x.shape[1], x.shape[3]
    freq = 1.0 / (10000.0 ** (torch.arange(0, hd, 2, dtype=torch.float32) / hd))
    angle = torch.arange(s, dtype=torch.float32)[:, None] * freq[None, :]
    cos, sin = angle.cos()[None, :, None, :], angle.sin()[None, :, None, :]
    a, b = x[..., 0::2], x[..., 1::2]
    return torch.stack((a * cos - b * sin, a * sin + b * cos), dim=-1).flatten(-2)


def forward(w, tokens, dim, layers, tp=1, group=None):
    """Logits [B, S, vocab] of TOKENS [B, S]; W holds the whole tensors (TP 1) or this rank's slices."""
    r = dist.get_rank(group) if group is not None else 0
    hd = dim // HEADS
    heads, kv_heads = HEADS // tp, KV_HEADS // tp

    def reduce(x):
        if group is not None:
            dist.all_reduce(x, group=group)
        return x

    vocab_part = w["embed_tokens"].shape[0]
    local = tokens - r * vocab_part
    inside = (local >= 0) & (local < vocab_part)
    x = reduce(w["embed_tokens"][local.clamp(0, vocab_part - 1)] * inside[..., None])
    b, s = tokens.shape
    mask = torch.full((s, s), float("-inf")).triu(1)
    for l in range(layers):
        p = f"layers.{l}."
        h = rms_norm(x, w[p + "input_layernorm"])
        q = rope((h @ w[p + "self_attn.q_proj"].T).view(b, s, heads, hd))
        k = rope((h @ w[p + "self_attn.k_proj"].T).view(b, s, kv_heads, hd))
        v = (h @ w[p + "self_attn.v_proj"].T).view(b, s, kv_heads, hd)
        k, v = (t.repeat_interleave(HEADS // KV_HEADS, dim=2) for t in (k, v))
        att = torch.einsum("bqhd,bkhd->bhqk", q, k) / math.sqrt(hd) + mask
        out = torch.einsum("bhqk,bkhd->bqhd", att.softmax(-1), v).reshape(b, s, heads * hd)
        x = x + reduce(out @ w[p + "self_attn.o_proj"].T)
        h = rms_norm(x, w[p + "post_attention_layernorm"])
        x = x + reduce((F.silu(h @ w[p + "mlp.gate_proj"].T) * (h @ w[p + "mlp.up_proj"].T))
                       @ w[p + "mlp.down_proj"].T)
    logits = rms_norm(x, w["norm"]) @ w["lm_head"].T
    if group is None:
        return logits
    parts = [torch.empty_like(logits) for _ in range(tp)]
    dist.all_gather(parts, logits.contiguous(), group=group)
    return torch.cat(parts, dim=-1)


def slice_of(whole, split, tp, r):
    """TP rank R's slice of a whole tensor, as step 10's layout keeps it (0 column, 1 row, 2 none)."""
    if split == 0:
        return whole.chunk(tp, dim=0)[r]
    if split == 1:
        return whole.chunk(tp, dim=1)[r]
    return whole


def join_slices(slices, split):
    """The whole tensor from every rank's slice, in TP rank order."""
    if split == 0:
        return torch.cat(slices, dim=0)
    if split == 1:
        return torch.cat(slices, dim=1)
    return slices[0]
