//! Text to token ids with the model's own tokenizer.
//!
//! ```text
//! safetensors   the tokenizer.json beside the weights, read by Hugging Face's `tokenizers`
//!               crate (the same code as the Python package): normalizer, pre-tokenizer,
//!               model (WordPiece, BPE, Unigram) and post-processor ([CLS] … [SEP], BOS) as
//!               the checkpoint ships them; its padding and truncation switched off (every
//!               token of the text, no pad tokens)
//! GGUF          rebuilt from the file's metadata (tokenizer.ggml.*) where llama.cpp's
//!               tokenizer has an exact counterpart in `tokenizers`:
//!   gpt2        byte-level BPE: tokens → ids, merges (rank order), the pre-tokenizer named by
//!               tokenizer.ggml.pre ("gpt-2": GPT-2's split; "smollm": each digit alone, then
//!               GPT-2's split — llama.cpp's regexes for them); control tokens (type 3) and
//!               user-defined ones (type 4) matched whole in the text; BOS / EOS added as
//!               tokenizer.ggml.add_bos_token / add_eos_token say
//!   llama       SentencePiece (Gemma, Llama 1/2): llama.cpp's merges by score, written
//!               out in [`crate::sentencepiece`]; BOS / EOS as the metadata says
//!   bert        WordPiece (BERT, all-MiniLM): llama.cpp's "phantom space" vocabulary spelled
//!               back ("▁word" → "word", "piece" → "##piece"), BERT's normalizer (lowercase,
//!               accents stripped) and pre-tokenizer, [CLS] … [SEP] around the text
//!   other       refused by name (t5: Unigram, other BPE pre-tokenizers): pass --tokens
//! ```
//!
//! Token ids are public inputs of a layer-0 proof (its embedding rows); the tokenizer itself is
//! not part of what is proven — the proof attests what the model computes on the ids, and
//! these are the ids the model's own tokenizer gives.

use crate::ModelError;
use crate::gguf::MetadataValue;
use crate::sentencepiece::SentencePiece;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use tokenizers::models::bpe::{BPE, Vocab};
use tokenizers::pre_tokenizers::PreTokenizerWrapper;
use tokenizers::pre_tokenizers::byte_level::ByteLevel;
use tokenizers::pre_tokenizers::digits::Digits;
use tokenizers::pre_tokenizers::sequence::Sequence;
use tokenizers::{AddedToken, Tokenizer};

/// What turns text into ids.
enum Engine {
    /// Hugging Face's `tokenizers` (a tokenizer.json, or byte-level BPE from GGUF).
    HuggingFace(Box<Tokenizer>),
    /// llama.cpp's SentencePiece (GGUF `llama` vocabularies).
    SentencePiece(Box<SentencePiece>),
}

/// A model's tokenizer.
pub struct TextTokenizer {
    engine: Engine,
    /// Ids added before / after the text (GGUF's add_bos_token / add_eos_token; a
    /// tokenizer.json adds its own through its post-processor).
    wrap: (Option<u32>, Option<u32>),
    /// Where it came from, in words.
    pub source: String,
}

impl std::fmt::Debug for TextTokenizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TextTokenizer").field("source", &self.source).finish_non_exhaustive()
    }
}

fn tokenizer_error(path: &Path, e: impl std::fmt::Display) -> ModelError {
    ModelError::Tokenizer { path: path.to_path_buf(), message: e.to_string() }
}

impl TextTokenizer {
    /// Reads a Hugging Face `tokenizer.json`.
    ///
    /// # Errors
    /// [`ModelError::Io`] when it cannot be read, [`ModelError::Tokenizer`] when it does not
    /// parse.
    pub fn from_json(path: &Path) -> Result<Self, ModelError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| ModelError::Io { path: path.to_path_buf(), message: e.to_string() })?;
        let mut tokenizer: Tokenizer = text.parse().map_err(|e| tokenizer_error(path, e))?;
        // A checkpoint's tokenizer.json may pad every input to a fixed length or cut it at
        // one (all-MiniLM-L6-v2's pads to 128): the proof takes the text's own tokens, all of
        // them (a sequence too long for the model is refused later, not cut).
        tokenizer.with_padding(None);
        tokenizer.with_truncation(None).map_err(|e| tokenizer_error(path, e))?;
        Ok(Self {
            engine: Engine::HuggingFace(Box::new(tokenizer)),
            wrap: (None, None),
            source: path.display().to_string(),
        })
    }

    /// The `tokenizer.json` beside the model file `model` (in its folder), if there is one.
    ///
    /// # Errors
    /// As [`TextTokenizer::from_json`].
    pub fn beside(model: &Path) -> Result<Option<Self>, ModelError> {
        tokenizer_json_path(model).map(|path| Self::from_json(&path)).transpose()
    }

    /// The tokenizer a GGUF file's metadata describes (`path` names the file in messages).
    ///
    /// # Errors
    /// [`ModelError::Tokenizer`] when the metadata has no tokenizer, describes one this
    /// module does not rebuild exactly (named), or is inconsistent (a merge of unknown
    /// tokens, an id outside the vocabulary).
    pub fn from_gguf(path: &Path, metadata: &HashMap<String, MetadataValue>) -> Result<Self, ModelError> {
        let fail = |message: String| ModelError::Tokenizer { path: path.to_path_buf(), message };
        let text = |key: &str| metadata.get(key).and_then(MetadataValue::as_text);
        let model = text("tokenizer.ggml.model").ok_or_else(|| {
            fail("the file has no tokenizer (no tokenizer.ggml.model); pass --tokens".into())
        })?;
        let tokens = metadata
            .get("tokenizer.ggml.tokens")
            .and_then(MetadataValue::as_texts)
            .ok_or_else(|| fail("tokenizer.ggml.tokens is missing".into()))?;
        let size = u32::try_from(tokens.len()).map_err(|_| fail("the vocabulary is too large".into()))?;
        let types =
            metadata.get("tokenizer.ggml.token_type").and_then(MetadataValue::as_numbers).unwrap_or(&[]);
        let wrap = (wrap_id(metadata, "bos", size, &fail)?, wrap_id(metadata, "eos", size, &fail)?);
        match model {
            "gpt2" => {}
            "llama" => {
                let scores = metadata
                    .get("tokenizer.ggml.scores")
                    .and_then(MetadataValue::as_numbers)
                    .ok_or_else(|| fail("tokenizer.ggml.scores is missing".into()))?;
                let prefix = metadata
                    .get("tokenizer.ggml.add_space_prefix")
                    .and_then(MetadataValue::as_bool)
                    .unwrap_or(true);
                let engine = SentencePiece::new(tokens, scores, types, prefix).map_err(fail)?;
                return Ok(Self {
                    engine: Engine::SentencePiece(Box::new(engine)),
                    wrap,
                    source: format!("{} (GGUF metadata: SentencePiece)", path.display()),
                });
            }
            "bert" => return Self::word_piece(path, tokens, types, metadata, &fail),
            other => {
                let kind = match other {
                    "t5" => "Unigram",
                    _ => "unknown",
                };
                return Err(fail(format!(
                    "its tokenizer (tokenizer.ggml.model {other}: {kind}) is not rebuilt from GGUF metadata yet \
                     (byte-level BPE, gpt2, SentencePiece, llama, and WordPiece, bert, are); pass --tokens, or use \
                     the safetensors checkpoint with its tokenizer.json"
                )));
            }
        }
        let pre = text("tokenizer.ggml.pre").unwrap_or("default");
        let byte_level = || PreTokenizerWrapper::ByteLevel(ByteLevel::new(false, true, true));
        let pre_tokenizer = match pre {
            "gpt-2" | "gpt2" => Sequence::new(vec![byte_level()]),
            "smollm" => Sequence::new(vec![PreTokenizerWrapper::Digits(Digits::new(true)), byte_level()]),
            other => {
                return Err(fail(format!(
                    "its BPE pre-tokenizer (tokenizer.ggml.pre {other}) is not rebuilt from GGUF metadata yet \
                     (gpt-2 and smollm are); pass --tokens"
                )));
            }
        };
        let merges = metadata
            .get("tokenizer.ggml.merges")
            .and_then(MetadataValue::as_texts)
            .ok_or_else(|| fail("tokenizer.ggml.merges is missing".into()))?;
        let vocab: Vocab = tokens.iter().zip(0..size).map(|(t, id)| (t.clone(), id)).collect();
        let mut pairs = Vec::with_capacity(merges.len());
        for merge in merges {
            let (a, b) = merge
                .split_once(' ')
                .ok_or_else(|| fail(format!("the merge {merge:?} is not two tokens")))?;
            pairs.push((a.to_string(), b.to_string()));
        }
        let bpe = BPE::builder().vocab_and_merges(vocab, pairs).build().map_err(|e| fail(e.to_string()))?;
        let mut tokenizer = Tokenizer::new(bpe);
        tokenizer.with_pre_tokenizer(Some(pre_tokenizer));
        tokenizer.with_decoder(Some(ByteLevel::default()));
        // Control (3) and user-defined (4) tokens are matched whole, as llama.cpp and the
        // checkpoints' tokenizer.json do.
        let mut special = Vec::new();
        let mut added = Vec::new();
        for (token, &kind) in tokens.iter().zip(types) {
            match kind as i64 {
                3 => special.push(AddedToken::from(token.clone(), true)),
                4 => added.push(AddedToken::from(token.clone(), false)),
                _ => {}
            }
        }
        tokenizer.add_special_tokens(&special);
        tokenizer.add_tokens(&added);
        Ok(Self {
            engine: Engine::HuggingFace(Box::new(tokenizer)),
            wrap,
            source: format!("{} (GGUF metadata: BPE, pre-tokenizer {pre})", path.display()),
        })
    }

    /// BERT's WordPiece from llama.cpp's GGUF spelling of the vocabulary ("phantom space": a
    /// word-initial token carries "▁", a continuation has lost its "##", control tokens are
    /// kept), turned back into the checkpoint's vocabulary; BERT's normalizer (lowercase, accents
    /// stripped, control characters removed, CJK characters split) and pre-tokenizer (whitespace
    /// and punctuation), greedy longest-match WordPiece with [UNK] for a word it cannot cover —
    /// llama.cpp's `llm_tokenizer_wpm`, which lowercases every BERT vocabulary — and [CLS] … [SEP]
    /// around the text.
    fn word_piece(
        path: &Path,
        tokens: &[String],
        types: &[f64],
        metadata: &HashMap<String, MetadataValue>,
        fail: &dyn Fn(String) -> ModelError,
    ) -> Result<Self, ModelError> {
        use tokenizers::models::wordpiece::WordPiece;
        use tokenizers::normalizers::bert::BertNormalizer;
        use tokenizers::pre_tokenizers::bert::BertPreTokenizer;
        let control = |id: usize| types.get(id).is_some_and(|&t| t as i64 == 3);
        let spelled: Vec<String> = tokens
            .iter()
            .enumerate()
            .map(|(id, token)| {
                if control(id) || (token.starts_with('[') && token.ends_with(']')) {
                    token.clone()
                } else if let Some(word) = token.strip_prefix('\u{2581}') {
                    word.to_string()
                } else {
                    format!("##{token}")
                }
            })
            .collect();
        let size = u32::try_from(spelled.len()).map_err(|_| fail("the vocabulary is too large".into()))?;
        let special = |keys: &[&str], fallback: &str| -> Result<u32, ModelError> {
            keys.iter()
                .find_map(|key| {
                    metadata.get(&format!("tokenizer.ggml.{key}_token_id")).and_then(MetadataValue::as_usize)
                })
                .or_else(|| spelled.iter().position(|t| t == fallback))
                .and_then(|id| u32::try_from(id).ok())
                .filter(|&id| id < size)
                .ok_or_else(|| fail(format!("the WordPiece vocabulary has no {fallback} token")))
        };
        // llama.cpp spells the separator key "seperator".
        let cls = special(&["cls", "bos"], "[CLS]")?;
        let sep = special(&["seperator", "separator", "eos"], "[SEP]")?;
        let unknown = special(&["unknown"], "[UNK]")?;
        let unknown_text = spelled.get(unknown as usize).cloned().unwrap_or_default();
        let mut vocab = Vocab::default();
        for (token, id) in spelled.iter().zip(0..size) {
            if vocab.insert(token.clone(), id).is_some() {
                return Err(fail(format!("the token {token:?} appears twice in the WordPiece vocabulary")));
            }
        }
        let model = WordPiece::builder()
            .vocab(vocab)
            .unk_token(unknown_text)
            .continuing_subword_prefix("##".into())
            .max_input_chars_per_word(100)
            .build()
            .map_err(|e| fail(e.to_string()))?;
        let mut tokenizer = Tokenizer::new(model);
        tokenizer.with_normalizer(Some(BertNormalizer::new(true, true, None, true)));
        tokenizer.with_pre_tokenizer(Some(BertPreTokenizer));
        tokenizer.with_decoder(Some(tokenizers::decoders::wordpiece::WordPiece::default()));
        let special_tokens: Vec<AddedToken> = spelled
            .iter()
            .enumerate()
            .filter(|(id, _)| control(*id))
            .map(|(_, token)| AddedToken::from(token.clone(), true))
            .collect();
        tokenizer.add_special_tokens(&special_tokens);
        Ok(Self {
            engine: Engine::HuggingFace(Box::new(tokenizer)),
            wrap: (Some(cls), Some(sep)),
            source: format!("{} (GGUF metadata: WordPiece)", path.display()),
        })
    }

    /// The token ids of `text`, with the special tokens the model expects around it.
    ///
    /// # Errors
    /// [`ModelError::Input`] for text that gives no tokens or that the tokenizer rejects.
    pub fn encode(&self, text: &str) -> Result<Vec<usize>, ModelError> {
        let reject =
            |e: &dyn std::fmt::Display| ModelError::Input(format!("the tokenizer rejects the text: {e}"));
        let body: Vec<u32> = match &self.engine {
            Engine::HuggingFace(tokenizer) => {
                tokenizer.encode(text, true).map_err(|e| reject(&e))?.get_ids().to_vec()
            }
            Engine::SentencePiece(engine) => engine.encode(text).map_err(|e| reject(&e))?,
        };
        let mut ids: Vec<usize> = Vec::with_capacity(body.len() + 2);
        ids.extend(self.wrap.0.map(|id| id as usize));
        ids.extend(body.iter().map(|&id| id as usize));
        ids.extend(self.wrap.1.map(|id| id as usize));
        if ids.is_empty() {
            return Err(ModelError::Input("the text gives no tokens".into()));
        }
        Ok(ids)
    }

    /// The text of `ids` (special tokens kept), for showing what was proven.
    ///
    /// # Errors
    /// [`ModelError::Input`] for an id outside the vocabulary.
    pub fn decode(&self, ids: &[usize]) -> Result<String, ModelError> {
        let ids: Vec<u32> = ids.iter().map(|&id| u32::try_from(id).unwrap_or(u32::MAX)).collect();
        let fail = |e: &dyn std::fmt::Display| ModelError::Input(format!("cannot decode the ids: {e}"));
        match &self.engine {
            Engine::HuggingFace(tokenizer) => tokenizer.decode(&ids, false).map_err(|e| fail(&e)),
            Engine::SentencePiece(engine) => engine.decode(&ids).map_err(|e| fail(&e)),
        }
    }

    /// The number of tokens in the vocabulary (added tokens included).
    pub fn vocabulary_size(&self) -> usize {
        match &self.engine {
            Engine::HuggingFace(tokenizer) => tokenizer.get_vocab_size(true),
            Engine::SentencePiece(engine) => engine.len(),
        }
    }
}

/// The id a GGUF file adds around the text (`key`: `bos` or `eos`) when
/// `tokenizer.ggml.add_<key>_token` is set.
fn wrap_id(
    metadata: &HashMap<String, MetadataValue>,
    key: &str,
    size: u32,
    fail: &dyn Fn(String) -> ModelError,
) -> Result<Option<u32>, ModelError> {
    let flag = metadata.get(&format!("tokenizer.ggml.add_{key}_token")).and_then(MetadataValue::as_bool);
    if flag != Some(true) {
        return Ok(None);
    }
    metadata
        .get(&format!("tokenizer.ggml.{key}_token_id"))
        .and_then(MetadataValue::as_usize)
        .and_then(|id| u32::try_from(id).ok())
        .filter(|&id| id < size)
        .map(Some)
        .ok_or_else(|| {
            fail(format!("add_{key}_token is set but {key}_token_id is missing or outside the vocabulary"))
        })
}

/// The `tokenizer.json` in the folder of the model file `model`, if there is one.
pub fn tokenizer_json_path(model: &Path) -> Option<PathBuf> {
    model.parent().map(|dir| dir.join("tokenizer.json")).filter(|p| p.is_file())
}
