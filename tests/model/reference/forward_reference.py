#!/usr/bin/python3
"""The forward of a llama / qwen2 / qwen3 / gemma3 GGUF in numpy (float64),
written from llama.cpp's graphs (src/models/{llama,qwen2,qwen3,gemma3}.cpp,
ggml's rope and GELU) and its hyper-parameter loading, not from tessera's code.

    /usr/bin/python3 forward_reference.py MODEL.gguf TOKENS OUT.f32 [--skip WHAT]

TOKENS is a comma-separated list of token ids, fed at positions 0, 1, ...
OUT.f32 receives the logits of every position, float32 little-endian
[positions, vocab]. Only f32 and f16 tensors are read (make the model with
`tessera make-model --dtype f32` or f16).

--skip drops one layer difference (bias, qk_norm, post_norms, gelu,
rope_neox, rope_freqs, rope_scale, swa, swa_base, embed_scale), for showing
that the comparison notices it.
"""
import math
import struct
import sys

import numpy as np

GGUF_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?",
                10: "<Q", 11: "<q", 12: "<d"}
STRING, ARRAY = 8, 9
F32, F16 = 0, 1


class Reader:
    def __init__(self, data):
        self.data = data
        self.at = 0

    def take(self, fmt):
        value = struct.unpack_from(fmt, self.data, self.at)[0]
        self.at += struct.calcsize(fmt)
        return value

    def string(self):
        n = self.take("<Q")
        s = self.data[self.at:self.at + n].decode("utf-8")
        self.at += n
        return s

    def value(self, kind):
        if kind == STRING:
            return self.string()
        if kind == ARRAY:
            inner = self.take("<I")
            count = self.take("<Q")
            return [self.value(inner) for _ in range(count)]
        return self.take(GGUF_SCALARS[kind])


def read_gguf(path):
    """Metadata dict and {name: numpy array (outermost dimension first)}."""
    with open(path, "rb") as f:
        data = f.read()
    r = Reader(data)
    if data[:4] != b"GGUF":
        raise SystemExit(f"{path}: not a GGUF file")
    r.at = 4
    version = r.take("<I")
    if version < 2:
        raise SystemExit(f"{path}: GGUF version {version} is too old")
    n_tensors = r.take("<Q")
    n_kv = r.take("<Q")
    meta = {}
    for _ in range(n_kv):
        key = r.string()
        meta[key] = r.value(r.take("<I"))
    infos = []
    for _ in range(n_tensors):
        name = r.string()
        n_dims = r.take("<I")
        ne = [r.take("<Q") for _ in range(n_dims)]
        kind = r.take("<I")
        offset = r.take("<Q")
        infos.append((name, ne, kind, offset))
    alignment = meta.get("general.alignment", 32)
    base = (r.at + alignment - 1) // alignment * alignment
    tensors = {}
    for name, ne, kind, offset in infos:
        count = int(np.prod(ne))
        if kind == F32:
            dtype = np.float32
        elif kind == F16:
            dtype = np.float16
        else:
            continue  # not needed by a model this script is asked to run
        array = np.frombuffer(data, dtype=dtype, count=count, offset=base + offset)
        tensors[name] = array.astype(np.float64).reshape(list(reversed(ne)))
    return meta, tensors


def rms_norm(x, weight, eps):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * weight


def rope(x, positions, base, freq_scale, factors, neox):
    """ggml_rope_ext with ext_factor 0: x [T, heads, head_dim] rotated at positions."""
    head_dim = x.shape[-1]
    half = head_dim // 2
    pair = np.arange(half)
    theta = np.power(base, -2.0 * pair / head_dim)            # theta_scale^(i0/2)
    if factors is not None:
        theta = theta / factors
    angle = freq_scale * np.outer(positions, theta)            # [T, half]
    cos = np.cos(angle)[:, None, :]
    sin = np.sin(angle)[:, None, :]
    out = x.copy()
    if neox:
        a, b = x[..., :half], x[..., half:]
        out[..., :half] = a * cos - b * sin
        out[..., half:] = a * sin + b * cos
    else:
        a, b = x[..., 0::2], x[..., 1::2]
        out[..., 0::2] = a * cos - b * sin
        out[..., 1::2] = a * sin + b * cos
    return out


def gelu_tanh(x):
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


def silu(x):
    return x / (1.0 + np.exp(-x))


class Hparams:
    """What llama.cpp's load_hparams / load_arch_hparams take from the keys."""

    def __init__(self, meta, tensors, skip):
        arch = meta["general.architecture"]
        if arch not in ("llama", "qwen2", "qwen3", "gemma3"):
            raise SystemExit(f"architecture {arch} is not one this reference runs")
        k = lambda suffix, default=None: meta.get(f"{arch}.{suffix}", default)
        self.arch = arch
        self.dim = k("embedding_length")
        self.layers = k("block_count")
        self.heads = k("attention.head_count")
        self.kv_heads = k("attention.head_count_kv", self.heads)
        self.head_dim = k("attention.key_length", self.dim // self.heads)
        self.eps = k("attention.layer_norm_rms_epsilon")
        self.base = k("rope.freq_base", 10000.0)
        scaling = k("rope.scaling.type", "linear")
        factor = k("rope.scaling.factor", k("rope.scale_linear", 0.0))
        if scaling not in ("linear", "none"):
            raise SystemExit(f"rope scaling {scaling} is not one this reference runs")
        self.freq_scale = 1.0 if factor == 0.0 or "rope_scale" in skip else 1.0 / factor
        # llama.cpp's rope type per architecture: NEOX for qwen2, qwen3, gemma3.
        self.neox = arch in ("qwen2", "qwen3", "gemma3") and "rope_neox" not in skip
        self.factors = tensors.get("rope_freqs.weight") if arch == "llama" else None
        if "rope_freqs" in skip:
            self.factors = None
        self.is_swa = [False] * self.layers
        self.n_swa = 0
        self.base_swa = 10000.0
        self.attention_scale = 1.0 / math.sqrt(self.head_dim)
        self.softcap = 0.0
        if arch == "gemma3":
            self.n_swa = k("attention.sliding_window", 0)
            if self.n_swa > 0 and "swa" not in skip:
                period = k("attention.sliding_window_pattern", 6)
                self.is_swa = [period == 0 or il % period < period - 1
                               for il in range(self.layers)]
                self.base_swa = k("rope.freq_base_swa", 10000.0)
                if "swa_base" in skip:
                    self.base_swa = self.base
            self.softcap = k("final_logit_softcapping", 0.0)
            if self.layers == 62:
                self.attention_scale = 1.0 / math.sqrt(self.dim // self.heads)


def forward(path, tokens, skip):
    meta, t = read_gguf(path)
    hp = Hparams(meta, t, skip)
    n = len(tokens)
    positions = np.arange(n, dtype=np.float64)
    x = t["token_embd.weight"][tokens]                         # [T, dim]
    if hp.arch == "gemma3" and "embed_scale" not in skip:
        x = x * float(np.float32(math.sqrt(hp.dim)))
    group = hp.heads // hp.kv_heads
    causal = np.tril(np.ones((n, n), dtype=bool))
    distance = positions[:, None] - positions[None, :]
    for il in range(hp.layers):
        blk = lambda name: t.get(f"blk.{il}.{name}")
        h = rms_norm(x, blk("attn_norm.weight"), hp.eps)
        q = h @ blk("attn_q.weight").T
        k = h @ blk("attn_k.weight").T
        v = h @ blk("attn_v.weight").T
        if blk("attn_q.bias") is not None and "bias" not in skip:
            q = q + blk("attn_q.bias")
            k = k + blk("attn_k.bias")
            v = v + blk("attn_v.bias")
        q = q.reshape(n, hp.heads, hp.head_dim)
        k = k.reshape(n, hp.kv_heads, hp.head_dim)
        v = v.reshape(n, hp.kv_heads, hp.head_dim)
        if blk("attn_q_norm.weight") is not None and "qk_norm" not in skip:
            q = rms_norm(q, blk("attn_q_norm.weight"), hp.eps)
            k = rms_norm(k, blk("attn_k_norm.weight"), hp.eps)
        base = hp.base_swa if hp.is_swa[il] else hp.base
        scale = 1.0 if hp.is_swa[il] else hp.freq_scale
        q = rope(q, positions, base, scale, hp.factors, hp.neox)
        k = rope(k, positions, base, scale, hp.factors, hp.neox)
        visible = causal.copy()
        if hp.is_swa[il]:
            visible &= distance < hp.n_swa                     # masked when p1 - p0 >= n_swa
        out = np.zeros((n, hp.heads, hp.head_dim))
        for head in range(hp.heads):
            kv = head // group
            scores = (q[:, head, :] @ k[:, kv, :].T) * hp.attention_scale
            scores = np.where(visible, scores, -np.inf)
            scores = scores - scores.max(axis=1, keepdims=True)
            p = np.exp(scores)
            p = p / p.sum(axis=1, keepdims=True)
            out[:, head, :] = p @ v[:, kv, :]
        o = out.reshape(n, hp.heads * hp.head_dim) @ blk("attn_output.weight").T
        if blk("post_attention_norm.weight") is not None and "post_norms" not in skip:
            o = rms_norm(o, blk("post_attention_norm.weight"), hp.eps)
        x = x + o
        h = rms_norm(x, blk("ffn_norm.weight"), hp.eps)
        gate = h @ blk("ffn_gate.weight").T
        up = h @ blk("ffn_up.weight").T
        act = gelu_tanh(gate) if hp.arch == "gemma3" and "gelu" not in skip else silu(gate)
        d = (act * up) @ blk("ffn_down.weight").T
        if blk("post_ffw_norm.weight") is not None and "post_norms" not in skip:
            d = rms_norm(d, blk("post_ffw_norm.weight"), hp.eps)
        x = x + d
    x = rms_norm(x, t["output_norm.weight"], hp.eps)
    output = t.get("output.weight", t["token_embd.weight"])
    logits = x @ output.T
    if hp.softcap > 0:
        logits = hp.softcap * np.tanh(logits / hp.softcap)
    return logits


def main(argv):
    if len(argv) not in (4, 6) or (len(argv) == 6 and argv[4] != "--skip"):
        raise SystemExit(__doc__)
    tokens = [int(s) for s in argv[2].split(",")]
    skip = {argv[5]} if len(argv) == 6 else set()
    logits = forward(argv[1], tokens, skip)
    logits.astype("<f4").tofile(argv[3])


if __name__ == "__main__":
    main(sys.argv)
