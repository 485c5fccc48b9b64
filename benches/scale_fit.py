"""The cost model of docs/SCALE.md, fitted to one-layer measurements.

Reads the JSON lines `benches/scale_layers.sh` appends (one whole GPT-2-shaped layer: width,
tokens, mode, prove time, peak memory, proof bytes, verify time, key bytes) and fits, per mode,
time and peak memory of one layer's proof as non-negative combinations of

    W      the layer's weights (attention and MLP matrices)
    s²·h   the attention's score entries (tokens² × query heads)
    s·W    the projections' multiply-adds
    1      a fixed cost

(non-negative least squares on the relative error, every subset of the terms tried), and the
proof's bytes as p0 + p1·√(s²·h) + p2·√W. Then it prints the fit against every measurement and
the model's predictions for GPT-2, Llama-3-8B and Llama-3-70B shapes at 512 and 2048 tokens.

Usage: python3 benches/scale_fit.py results.jsonl
"""

import itertools
import json
import math
import sys

import numpy as np


def gpt2_weights(d):
    return 12 * d * d  # W_q, W_k, W_v, W_o (d × d) and the MLP's d × 4d, 4d × d


# name: (layers, d_model, query heads, head width, key/value heads, MLP width, gated MLP)
SHAPES = {
    "GPT-2 small": (12, 768, 12, 64, 12, 3072, False),
    "Llama-3-8B": (32, 4096, 32, 128, 8, 14336, True),
    "Llama-3-70B": (80, 8192, 64, 128, 8, 28672, True),
}


def shape_weights(d, h, m, kv, n, gated):
    attention = d * h * m * 2 + d * kv * m * 2  # W_q, W_o and W_k, W_v
    return attention + d * n * (3 if gated else 2)


def features(W, s, h):
    return np.array([W, s * s * h, s * W, 1.0])


def nnls_relative(X, y):
    """Non-negative least squares on y's relative error: the best of every subset of columns
    whose unconstrained fit is non-negative."""
    best = None
    Xr = X / y[:, None]
    yr = np.ones_like(y)
    for k in range(1, X.shape[1] + 1):
        for columns in itertools.combinations(range(X.shape[1]), k):
            c, *_ = np.linalg.lstsq(Xr[:, columns], yr, rcond=None)
            if (c < 0).any():
                continue
            full = np.zeros(X.shape[1])
            full[list(columns)] = c
            error = float(np.sum((Xr @ full - yr) ** 2))
            if best is None or error < best[0]:
                best = (error, full)
    return best[1]


rows = [json.loads(line) for line in open(sys.argv[1] if len(sys.argv) > 1 else "results.jsonl")]
# The last measurement of each (width, tokens, mode) counts.
latest = {}
for r in rows:
    latest[(r["width"], r["tokens"], r["mode"])] = r
rows = sorted(latest.values(), key=lambda r: (r["mode"], r["width"], r["tokens"]))
terms = ["W", "s²·h", "s·W", "1"]
models = {}
for mode in ("zk", "plain"):
    R = [r for r in rows if r["mode"] == mode]
    X = np.array([features(gpt2_weights(r["width"]), r["tokens"], r["width"] // 64) for r in R])
    T = np.array([r["prove_ms"] / 1e3 for r in R])
    M = np.array([r["peak_bytes"] / 2**30 for r in R])
    P = np.array([r["layer_proof_bytes"] / 1e3 for r in R])
    t, m = nnls_relative(X, T), nnls_relative(X, M)
    Xp = np.array([[1.0, math.sqrt(x[1]), math.sqrt(x[0])] for x in X])
    p = nnls_relative(Xp, P)
    models[mode] = (t, m, p)
    print(f"## {mode}: time s = " + " + ".join(f"{c:.3g}·{n}" for c, n in zip(t, terms) if c))
    print(f"   peak GiB = " + " + ".join(f"{c:.3g}·{n}" for c, n in zip(m, terms) if c))
    print(f"   proof KB = {p[0]:.3g} + {p[1]:.3g}·√(s²·h) + {p[2]:.3g}·√W")
    print("| width | tokens | prove s (fit) | peak GiB (fit) | proof KB (fit) | verify ms | key B |")
    for r, x, xp in zip(R, X, Xp):
        print(
            f"| {r['width']} | {r['tokens']} | {r['prove_ms']/1e3:.1f} ({x @ t:.1f}) | {r['peak_bytes']/2**30:.2f} ({x @ m:.2f}) "
            f"| {r['layer_proof_bytes']/1e3:.0f} ({xp @ p:.0f}) | {min(r['verify_ms']):.0f} | {r['key_bytes']} |"
        )
print()
print("## predictions: one layer's proof on 2 cores (zero knowledge; plain)")
for name, (L, d, h, m, kv, n, gated) in SHAPES.items():
    W = shape_weights(d, h, m, kv, n, gated)
    for s in (512, 2048):
        x = features(W, s, h)
        out = []
        for mode in ("zk", "plain"):
            t, mm, p = models[mode]
            out.append((x @ t, x @ mm, p[0] + p[1] * math.sqrt(x[1]) + p[2] * math.sqrt(W)))
        print(
            f"| {name} | {s} | {L} | {W/1e6:.0f} M | {out[0][0]:.0f} s; {out[1][0]:.0f} s | {out[0][1]:.1f} GiB; {out[1][1]:.1f} GiB "
            f"| {out[0][2]:.0f} KB; {out[1][2]:.0f} KB |"
        )
