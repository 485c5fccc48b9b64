"""Writes a GPT-2-format model file of GPT-2-small's shape for `zkmha` benchmarks.

Every layer whole (ln_1, fused c_attn in Conv1D order, c_proj, ln_2, the MLP's c_fc and c_proj:
d_model 768, 12 heads, hidden width 3 072) and the final ln_f (the LM head tied to wte), weights
drawn with GPT-2's initialization statistics; a 1 000-token vocabulary and 1 024 positions; `config.json` beside it (GELU in its
tanh form, `gelu_new`, as GPT-2's); `tokens.txt` holds 512 token ids. 12 layers by default
(340 MB), `--layers N` for fewer. For the scaling measurements of docs/SCALE.md: `--width D` (D/64
heads of 64, hidden width 4·D; the default 768), `--positions P` (the position table, default
1 024) and `--tokens N` (the ids in tokens.txt, default 512). Needs numpy.

Usage: python3 make_gpt2_small.py OUT_DIR [--layers N] [--width D] [--positions P] [--tokens N]
"""

import json
import os
import struct
import sys

import numpy as np

args = sys.argv[1:]


def option(name, default):
    """The whole number after `name` in the arguments (removed from them), else `default`."""
    if name not in args:
        return default
    at = args.index(name)
    value = int(args[at + 1])
    del args[at : at + 2]
    return value


layers = option("--layers", 12)
width = option("--width", 768)
positions = option("--positions", 1024)
token_count = option("--tokens", 512)
if width % 64:
    sys.exit(f"--width must be a multiple of 64 (heads of 64), not {width}")
out = args[0] if args else "gpt2s"
os.makedirs(out, exist_ok=True)
rng = np.random.default_rng(2)
d, hidden, vocab = width, 4 * width, 1000
# The residual projections' scale 0.02/sqrt(2·layers) as GPT-2's initialization (12 layers).
residual_scale = 0.02 / np.sqrt(24)
tensors = {
    "wte.weight": rng.normal(0, 0.02, (vocab, d)),
    "wpe.weight": rng.normal(0, 0.01, (positions, d)),
}
for layer in range(layers):
    h = f"h.{layer}."
    tensors.update(
        {
            h + "ln_1.weight": 1 + rng.normal(0, 0.05, d),
            h + "ln_1.bias": rng.normal(0, 0.02, d),
            h + "attn.c_attn.weight": rng.normal(0, 0.02, (d, 3 * d)),
            h + "attn.c_attn.bias": rng.normal(0, 0.02, 3 * d),
            h + "attn.c_proj.weight": rng.normal(0, residual_scale, (d, d)),
            h + "attn.c_proj.bias": rng.normal(0, 0.02, d),
            h + "ln_2.weight": 1 + rng.normal(0, 0.05, d),
            h + "ln_2.bias": rng.normal(0, 0.02, d),
            h + "mlp.c_fc.weight": rng.normal(0, 0.02, (d, hidden)),
            h + "mlp.c_fc.bias": rng.normal(0, 0.02, hidden),
            h + "mlp.c_proj.weight": rng.normal(0, residual_scale, (hidden, d)),
            h + "mlp.c_proj.bias": rng.normal(0, 0.02, d),
        }
    )
# The final LayerNorm (the LM head is tied to wte, as GPT-2's), from its own generator so the
# layers and the token ids stay those of files written before it was added.
final = np.random.default_rng(3)
tensors.update({"ln_f.weight": 1 + final.normal(0, 0.05, d), "ln_f.bias": final.normal(0, 0.02, d)})
header, blobs, offset = {}, [], 0
for name, value in tensors.items():
    data = value.astype(np.float32).tobytes()
    header[name] = {"dtype": "F32", "shape": list(value.shape), "data_offsets": [offset, offset + len(data)]}
    offset += len(data)
    blobs.append(data)
text = json.dumps(header).encode()
text += b" " * ((8 - len(text) % 8) % 8)
with open(os.path.join(out, "model.safetensors"), "wb") as f:
    f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))
with open(os.path.join(out, "config.json"), "w") as f:
    f.write(
        '{"model_type": "gpt2", "n_head": %d, "n_layer": %d, "layer_norm_epsilon": 1e-5, '
        '"n_positions": %d, "activation_function": "gelu_new"}' % (d // 64, layers, positions)
    )
with open(os.path.join(out, "tokens.txt"), "w") as f:
    print(",".join(str(i) for i in rng.integers(0, vocab, token_count)), file=f)
