"""Writes a GPT-2-format model file of GPT-2-small's attention shape for `zkmha` benchmarks.

Layer 0 only (ln_1, fused c_attn in Conv1D order, c_proj), weights drawn with GPT-2's
initialization statistics; a 1 000-token vocabulary and 1 024 positions; `config.json` beside
it; `tokens.txt` holds 512 token ids. Needs numpy. Usage: python3 make_gpt2_small.py OUT_DIR
"""

import json
import os
import struct
import sys

import numpy as np

out = sys.argv[1] if len(sys.argv) > 1 else "gpt2s"
os.makedirs(out, exist_ok=True)
rng = np.random.default_rng(2)
d, vocab, positions = 768, 1000, 1024
tensors = {
    "wte.weight": rng.normal(0, 0.02, (vocab, d)),
    "wpe.weight": rng.normal(0, 0.01, (positions, d)),
    "h.0.ln_1.weight": 1 + rng.normal(0, 0.05, d),
    "h.0.ln_1.bias": rng.normal(0, 0.02, d),
    "h.0.attn.c_attn.weight": rng.normal(0, 0.02, (d, 3 * d)),
    "h.0.attn.c_attn.bias": rng.normal(0, 0.02, 3 * d),
    "h.0.attn.c_proj.weight": rng.normal(0, 0.02 / np.sqrt(24), (d, d)),
    "h.0.attn.c_proj.bias": rng.normal(0, 0.02, d),
}
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
    f.write('{"model_type": "gpt2", "n_head": 12, "layer_norm_epsilon": 1e-5, "n_positions": 1024}')
with open(os.path.join(out, "tokens.txt"), "w") as f:
    print(",".join(str(i) for i in rng.integers(0, vocab, 512)), file=f)
