//! llama.cpp's SentencePiece tokenizer (`llm_tokenizer_spm`), rebuilt from a GGUF file's
//! vocabulary and scores (`tokenizer.ggml.model llama`: Llama 1/2, Gemma, Mistral's early
//! files).
//!
//! ```text
//! text      split at every literal occurrence of a control, user-defined or unknown token
//!           (longest tokens first, as llama.cpp partitions); those pieces are their ids
//! each rest " " → "▁" ("▁" prepended when add_space_prefix is set and the rest starts the
//!           text or follows a special token); symbols = its UTF-8 characters
//! merge     while some adjacent pair's concatenation is a vocabulary token: merge the pair whose
//!           token has the highest score (ties: the leftmost pair)
//! emit      each symbol's id; a symbol that is no token (a single character outside the
//!           vocabulary) as its UTF-8 bytes' tokens <0xXX>
//! ```
//!
//! Written by hand: Hugging Face's `tokenizers` has no model that merges by the scores of the
//! merged pieces (its `Unigram` finds the best segmentation by Viterbi, which differs; its `BPE`
//! needs a merge list, which GGUF files of this kind do not carry), and the algorithm is 80 lines.
//! Checked against an independent implementation of llama.cpp's rules (`tests/gguf.rs`).

use std::cmp::Ordering;
use std::collections::{BinaryHeap, HashMap};

/// A SentencePiece vocabulary with scores, ready to tokenize.
pub struct SentencePiece {
    ids: HashMap<String, u32>,
    scores: Vec<f64>,
    tokens: Vec<String>,
    /// Control, user-defined and unknown tokens, matched literally, longest first.
    specials: Vec<(String, u32)>,
    bytes: HashMap<u8, u32>,
    add_space_prefix: bool,
}

/// A candidate merge: the pair starting at symbol `left`, its token's score, and the merged
/// text's length (to tell a stale candidate from a live one).
struct Bigram {
    score: f64,
    left: usize,
    size: usize,
}

impl PartialEq for Bigram {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Bigram {}

impl PartialOrd for Bigram {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Bigram {
    /// The highest score first; among equal scores, the leftmost pair.
    fn cmp(&self, other: &Self) -> Ordering {
        self.score.total_cmp(&other.score).then(other.left.cmp(&self.left))
    }
}

/// One symbol of the text being merged: its byte range, and its neighbours.
#[derive(Clone, Copy)]
struct Symbol {
    start: usize,
    len: usize,
    previous: Option<usize>,
    next: Option<usize>,
}

impl SentencePiece {
    /// A tokenizer of `tokens` with their `scores` and ggml token types (2 unknown, 3 control,
    /// 4 user-defined, 6 byte).
    ///
    /// # Errors
    /// A sentence when the three lists differ in length.
    pub fn new(
        tokens: &[String],
        scores: &[f64],
        types: &[f64],
        add_space_prefix: bool,
    ) -> Result<Self, String> {
        if scores.len() != tokens.len() || types.len() != tokens.len() {
            return Err(format!(
                "{} tokens, {} scores and {} token types do not match",
                tokens.len(),
                scores.len(),
                types.len()
            ));
        }
        let size = u32::try_from(tokens.len()).map_err(|_| "the vocabulary is too large".to_string())?;
        let mut ids = HashMap::with_capacity(tokens.len());
        let mut specials = Vec::new();
        let mut bytes = HashMap::new();
        for ((token, &kind), id) in tokens.iter().zip(types).zip(0..size) {
            // The first of duplicate texts wins, as llama.cpp's token_to_id map keeps it.
            ids.entry(token.clone()).or_insert(id);
            match kind as i64 {
                2..=4 if !token.is_empty() => specials.push((token.clone(), id)),
                6 => {
                    if let Some(byte) = token
                        .strip_prefix("<0x")
                        .and_then(|t| t.strip_suffix('>'))
                        .and_then(|hex| u8::from_str_radix(hex, 16).ok())
                    {
                        bytes.insert(byte, id);
                    }
                }
                _ => {}
            }
        }
        specials.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then(a.1.cmp(&b.1)));
        Ok(Self { ids, scores: scores.to_vec(), tokens: tokens.to_vec(), specials, bytes, add_space_prefix })
    }

    /// The ids of `text` (no BOS or EOS).
    ///
    /// # Errors
    /// A sentence naming a character that is neither a token nor expressible in byte tokens.
    pub fn encode(&self, text: &str) -> Result<Vec<u32>, String> {
        // Fragments: raw text, or a special token's id.
        enum Fragment<'a> {
            Raw(&'a str),
            Special(u32),
        }
        let mut fragments = vec![Fragment::Raw(text)];
        for (special, id) in &self.specials {
            let mut next = Vec::with_capacity(fragments.len());
            for fragment in fragments {
                match fragment {
                    Fragment::Raw(raw) if raw.contains(special.as_str()) => {
                        let mut rest = raw;
                        while let Some(at) = rest.find(special.as_str()) {
                            if at > 0 {
                                next.push(Fragment::Raw(&rest[..at]));
                            }
                            next.push(Fragment::Special(*id));
                            rest = &rest[at + special.len()..];
                        }
                        if !rest.is_empty() {
                            next.push(Fragment::Raw(rest));
                        }
                    }
                    other => next.push(other),
                }
            }
            fragments = next;
        }
        let mut out = Vec::new();
        let mut previous_special = true;
        for fragment in fragments {
            match fragment {
                Fragment::Special(id) => {
                    out.push(id);
                    previous_special = true;
                }
                Fragment::Raw(raw) => {
                    let prefix = if self.add_space_prefix && previous_special { "▁" } else { "" };
                    let escaped = format!("{prefix}{}", raw.replace(' ', "▁"));
                    self.merge(&escaped, &mut out)?;
                    previous_special = false;
                }
            }
        }
        Ok(out)
    }

    fn token(&self, text: &str) -> Option<u32> {
        self.ids.get(text).copied()
    }

    fn candidate(
        &self,
        text: &str,
        symbols: &[Symbol],
        left: Option<usize>,
        right: Option<usize>,
    ) -> Option<Bigram> {
        let (left, right) = (left?, right?);
        let (a, b) = (symbols[left], symbols[right]);
        let merged = &text[a.start..b.start + b.len];
        let id = self.token(merged)?;
        Some(Bigram { score: self.scores[id as usize], left, size: merged.len() })
    }

    /// Merges one escaped fragment and appends its ids.
    fn merge(&self, text: &str, out: &mut Vec<u32>) -> Result<(), String> {
        let mut symbols: Vec<Symbol> = Vec::new();
        for (start, c) in text.char_indices() {
            let index = symbols.len();
            symbols.push(Symbol {
                start,
                len: c.len_utf8(),
                previous: index.checked_sub(1),
                next: (start + c.len_utf8() < text.len()).then_some(index + 1),
            });
        }
        let mut queue = BinaryHeap::new();
        for i in 1..symbols.len() {
            queue.extend(self.candidate(text, &symbols, Some(i - 1), Some(i)));
        }
        while let Some(bigram) = queue.pop() {
            let left = symbols[bigram.left];
            let Some(right_index) = left.next else { continue };
            let right = symbols[right_index];
            // Stale: one of the two has been merged since.
            if left.len == 0 || right.len == 0 || left.len + right.len != bigram.size {
                continue;
            }
            symbols[bigram.left].len += right.len;
            symbols[right_index].len = 0;
            symbols[bigram.left].next = right.next;
            if let Some(next) = right.next {
                symbols[next].previous = Some(bigram.left);
            }
            let (previous, next) = (symbols[bigram.left].previous, symbols[bigram.left].next);
            queue.extend(self.candidate(text, &symbols, previous, Some(bigram.left)));
            queue.extend(self.candidate(text, &symbols, Some(bigram.left), next));
        }
        let mut at = (!symbols.is_empty()).then_some(0);
        while let Some(i) = at {
            let symbol = symbols[i];
            let piece = &text[symbol.start..symbol.start + symbol.len];
            match self.token(piece) {
                Some(id) => out.push(id),
                None => {
                    for byte in piece.bytes() {
                        let id = self.bytes.get(&byte).ok_or_else(|| {
                            format!(
                                "{piece:?} is not in the vocabulary, and neither is its byte <0x{byte:02X}>"
                            )
                        })?;
                        out.push(*id);
                    }
                }
            }
            at = symbol.next;
        }
        Ok(())
    }

    /// The text of `ids`: pieces joined, "▁" as spaces, byte tokens as their bytes.
    pub fn decode(&self, ids: &[u32]) -> Result<String, String> {
        let mut bytes = Vec::new();
        let by_id: HashMap<u32, u8> = self.bytes.iter().map(|(&b, &id)| (id, b)).collect();
        for &id in ids {
            let token =
                self.tokens.get(id as usize).ok_or_else(|| format!("id {id} is outside the vocabulary"))?;
            match by_id.get(&id) {
                Some(&byte) => bytes.push(byte),
                None => bytes.extend_from_slice(token.replace('▁', " ").as_bytes()),
            }
        }
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }

    /// The vocabulary's size.
    pub fn len(&self) -> usize {
        self.tokens.len()
    }

    /// Whether the vocabulary is empty.
    pub fn is_empty(&self) -> bool {
        self.tokens.is_empty()
    }
}
