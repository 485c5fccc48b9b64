//! What `zkmha verify` shows of the statement it accepted, and which softmax it accepts.
//!
//! ```text
//! shown      kind, shapes, mask, the softmax parameters (and where the expectation came
//!            from), a fingerprint of each commitment of the statement, a digest of the
//!            output, and for model layers the model commitment's fingerprint and the
//!            verifier key's description (escaped, labelled unauthenticated); as text or as
//!            one JSON object (--json)
//! fingerprint  the first 32 hex digits (128 bits) of BLAKE3 over the value's canonical
//!            encoding (arkworks, compressed): a commitment's bytes as in the file; the
//!            output's 8-byte little-endian length, then its entries (32-byte field
//!            elements for an attention layer's O, 8-byte integers for a model layer's Z)
//! softmax    the proof's parameters must be the ones the CLI's prover chooses for the
//!            proof's shape (SoftmaxParams::for_score_scale of the default score scale; for a
//!            model layer the ones its verifier key fixes), unless the user names the
//!            proof's with --softmax-params SPEC, SPEC exactly as printed:
//!            multiplier=M,shift=K,exponent_bits=G,output_bits=F,tolerance_bits=T  or  linear
//! ```

use crate::verdict::Verdict;
use serde_json::{Value, json};
use zkmha_attention::{AttentionShape, MaskKind, SoftmaxMode};

pub use zkmha_api::inspect::sanitize;
pub use zkmha_api::{fingerprint, softmax_spec};

/// A softmax named on the command line, in the printed (canonical) form.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SoftmaxSpec(String);

impl SoftmaxSpec {
    /// The canonical text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Parses `--softmax-params`: `linear`, or the five `name=value` pairs (any order, each once),
/// kept in the printed (canonical) form.
///
/// # Errors
/// As [`zkmha_api::parse_softmax_spec`].
pub fn parse_softmax_spec(text: &str) -> Result<SoftmaxSpec, String> {
    zkmha_api::parse_softmax_spec(text).map(|mode| SoftmaxSpec(softmax_spec(mode)))
}

/// Where the softmax the proof had to use came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SoftmaxSource {
    /// The CLI prover's default for the proof's shape.
    Default,
    /// Named with `--softmax-params`.
    Named,
    /// Fixed by the model's verifier key.
    VerifierKey,
}

impl SoftmaxSource {
    fn words(self) -> &'static str {
        match self {
            SoftmaxSource::Default => "the default for this shape",
            SoftmaxSource::Named => "named with --softmax-params",
            SoftmaxSource::VerifierKey => "fixed by the verifier key",
        }
    }

    fn code(self) -> &'static str {
        match self {
            SoftmaxSource::Default => "default",
            SoftmaxSource::Named => "named",
            SoftmaxSource::VerifierKey => "verifier key",
        }
    }
}

/// Accepts the proof's softmax when it is the one named with `--softmax-params` or, without
/// it, `expected` (from `source`).
///
/// # Errors
/// [`Verdict::Refused`], one sentence with the spec to name.
pub fn accept_softmax(
    proof: SoftmaxMode,
    expected: SoftmaxMode,
    source: SoftmaxSource,
    named: Option<&SoftmaxSpec>,
) -> Result<SoftmaxSource, Verdict> {
    let spec = softmax_spec(proof);
    match named {
        Some(named) if named.as_str() == spec => Ok(SoftmaxSource::Named),
        Some(named) => Err(Verdict::Refused(format!(
            "refused: the proof's softmax ({spec}) is not the one named with --softmax-params ({})",
            named.as_str()
        ))),
        None if proof == expected => Ok(source),
        None => Err(Verdict::Refused(format!(
            "refused: the proof's softmax ({spec}) is not {} ({}); to accept it, pass --softmax-params {spec}",
            source.words(),
            softmax_spec(expected)
        ))),
    }
}

/// What a model-layer proof adds to the report.
pub struct ModelPart {
    /// The verifier key's description, as read (shown sanitized).
    pub description: String,
    /// The model commitment's fingerprint.
    pub commitment: String,
    /// `d_model`.
    pub model_width: usize,
    /// Key/value heads.
    pub key_value_heads: usize,
    /// The projections' shifts.
    pub shifts: [u32; 4],
    /// What the residual adds to.
    pub residual: &'static str,
    /// Rotary base and fraction bits.
    pub rotary: Option<(u64, u32)>,
    /// The proven norm before the attention (its name), if any.
    pub norm: Option<&'static str>,
    /// The proven MLP half: its norm's name, gated or not, the hidden width, the activation.
    pub mlp: Option<MlpPart>,
    /// The QK-norm on every query and key head (its name), if proven (Gemma 3).
    pub query_key_norm: Option<&'static str>,
    /// The norms on the attention's and the MLP's outputs (their names), if proven (Gemma).
    pub output_norms: [Option<&'static str>; 2],
    /// The norm on the layer's output after the MLP's residual (its name), if proven (BERT).
    pub post_norm: Option<&'static str>,
}

/// The MLP half of a whole-layer proof, as the report shows it.
pub struct MlpPart {
    /// `RMSNorm` or `LayerNorm`.
    pub norm: &'static str,
    /// Gated (SwiGLU) or dense.
    pub gated: bool,
    /// Hidden width.
    pub hidden: usize,
    /// The activation's name.
    pub activation: &'static str,
}

/// The kind of proof.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A committed attention layer.
    Layer,
    /// A zero-knowledge committed attention layer.
    ZeroKnowledgeLayer,
    /// A model layer (with its verifier key).
    ModelLayer,
    /// A zero-knowledge model layer (with its hiding verifier key).
    ZeroKnowledgeModelLayer,
}

impl Kind {
    /// Whether proofs of this kind are zero-knowledge.
    pub fn is_zero_knowledge(self) -> bool {
        matches!(self, Self::ZeroKnowledgeLayer | Self::ZeroKnowledgeModelLayer)
    }

    /// The kind in words, as the JSON reports name it.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Layer => "attention layer",
            Kind::ZeroKnowledgeLayer => "zero-knowledge attention layer",
            Kind::ModelLayer => "model layer",
            Kind::ZeroKnowledgeModelLayer => "zero-knowledge model layer",
        }
    }
}

/// Everything a valid proof's statement says, as verify shows it.
pub struct Accepted {
    /// The kind.
    pub kind: Kind,
    /// The attention's shape.
    pub shape: AttentionShape,
    /// Model layers only.
    pub model: Option<ModelPart>,
    /// The mask.
    pub mask: MaskKind,
    /// The softmax.
    pub softmax: SoftmaxMode,
    /// Where the expected softmax came from.
    pub softmax_source: SoftmaxSource,
    /// `(name, fingerprint)` of each commitment of the statement.
    pub commitments: Vec<(&'static str, String)>,
    /// The output's name, rows, columns, fingerprint.
    pub output: (&'static str, usize, usize, String),
    /// Milliseconds verifying.
    pub verify_ms: f64,
    /// Milliseconds deriving the generators, when measured apart.
    pub setup_ms: Option<f64>,
    /// Where `verify --output` wrote the proven output.
    pub output_file: Option<String>,
    /// What the verifier accepted (its key, its input) where it has more than the above.
    pub statement: Option<zkmha_api::Verified>,
}

impl Accepted {
    fn softmax_json(&self) -> Value {
        let mut value = json!({
            "proven": self.softmax.is_proven(),
            "parameters": softmax_spec(self.softmax),
            "source": self.softmax_source.code(),
        });
        if let (SoftmaxMode::Exponential(p), Some(map)) = (self.softmax, value.as_object_mut()) {
            for (key, number) in [
                ("multiplier", p.multiplier),
                ("shift", u64::from(p.shift)),
                ("exponent_bits", u64::from(p.exponent_bits)),
                ("output_bits", u64::from(p.output_bits)),
                ("tolerance_bits", u64::from(p.tolerance_bits)),
            ] {
                map.insert(key.into(), json!(number));
            }
            map.insert("row_sum_tolerance".into(), json!(p.tolerance()));
        }
        value
    }

    /// The report as one JSON object.
    pub fn to_json(&self) -> Value {
        let s = &self.shape;
        let (name, rows, columns, digest) = &self.output;
        let commitments: serde_json::Map<String, Value> =
            self.commitments.iter().map(|(k, v)| (k.to_string(), json!(v))).collect();
        let mut value = json!({
            "valid": true,
            "kind": self.kind.name(),
            "zero_knowledge": self.kind.is_zero_knowledge(),
            "tokens": s.seq_len,
            "heads": s.heads,
            "head_dim": s.head_dim,
            "value_head_dim": s.value_head_dim,
            "mask": self.mask.to_string(),
            "softmax": self.softmax_json(),
            "commitments": commitments,
            "output": {"name": name, "rows": rows, "columns": columns, "blake3": digest, "file": self.output_file},
            "verify_ms": self.verify_ms,
            "setup_ms": self.setup_ms,
        });
        if let (Some(statement), Some(map)) = (&self.statement, value.as_object_mut()) {
            map.insert("statement".into(), statement_json(statement));
        }
        if let (Some(m), Some(map)) = (&self.model, value.as_object_mut()) {
            map.insert(
                "model".into(),
                json!({
                    "description": sanitize(&m.description),
                    "description_authenticated": false,
                    "commitment": m.commitment,
                }),
            );
            map.insert("model_width".into(), json!(m.model_width));
            map.insert("key_value_heads".into(), json!(m.key_value_heads));
            map.insert("shifts".into(), json!(m.shifts));
            map.insert("residual".into(), json!(m.residual));
            map.insert(
                "rotary".into(),
                m.rotary.map_or(Value::Null, |(base, bits)| json!({"base": base, "fraction_bits": bits})),
            );
            map.insert("norm".into(), json!(m.norm));
            map.insert("query_key_norm".into(), json!(m.query_key_norm));
            map.insert("post_norm".into(), json!(m.post_norm));
            map.insert(
                "output_norms".into(),
                json!({"attention": m.output_norms[0], "feed_forward": m.output_norms[1]}),
            );
            map.insert(
                "mlp".into(),
                m.mlp.as_ref().map_or(Value::Null, |p| {
                    json!({"norm": p.norm, "gated": p.gated, "hidden": p.hidden, "activation": p.activation})
                }),
            );
        }
        value
    }

    /// The report as lines of text.
    pub fn to_text(&self) -> Vec<String> {
        let s = &self.shape;
        let shape = format!(
            "s = {}, h = {}, m = {}, m_v = {}, mask = {}",
            s.seq_len, s.heads, s.head_dim, s.value_head_dim, self.mask
        );
        let mut lines = vec![match (&self.kind, &self.model) {
            (Kind::ZeroKnowledgeLayer, _) => format!(
                "valid (zero-knowledge proof): attention layer {shape} ({})",
                if self.softmax.is_proven() {
                    "softmax proven in zero knowledge: its lookups and columns masked and committed"
                } else {
                    "softmax not proven: linear attention"
                }
            ),
            (Kind::ModelLayer | Kind::ZeroKnowledgeModelLayer, Some(m)) => format!(
                "valid{}: model layer on {} tokens (output {} × {}): {}d_model = {}, {shape}, {} key/value heads, shifts k = {:?}, residual on {}{}{}{}{}",
                if self.kind.is_zero_knowledge() { " (zero-knowledge proof)" } else { "" },
                s.seq_len,
                s.seq_len,
                m.model_width,
                m.norm.map(|n| format!("{n} before the attention, ")).unwrap_or_default(),
                m.model_width,
                m.key_value_heads,
                m.shifts,
                m.residual,
                m.rotary.map(|(base, bits)| format!(", rotary base {base} at 2^-{bits}")).unwrap_or_default(),
                m.query_key_norm.map(|n| format!(", a {n} on every query and key head")).unwrap_or_default(),
                m.output_norms[0].map(|n| format!(", a {n} on the attention's output")).unwrap_or_default(),
                m.mlp
                    .as_ref()
                    .map(|p| format!(
                        "; then {} and the {} MLP ({} wide, {}){} with its residual{}: the whole layer",
                        p.norm,
                        if p.gated { "gated" } else { "dense" },
                        p.hidden,
                        p.activation,
                        m.output_norms[1].map(|n| format!(", a {n} on its output")).unwrap_or_default(),
                        m.post_norm
                            .map(|n| format!(" on the normed Z, then a {n} (post-norm)"))
                            .unwrap_or_default(),
                    ))
                    .unwrap_or_default()
            ),
            _ => format!(
                "valid: attention layer {shape} ({})",
                if self.softmax.is_proven() {
                    "softmax proven in fixed point"
                } else {
                    "softmax not proven: linear attention"
                }
            ),
        }];
        if let Some(m) = &self.model {
            lines.push(format!(
                "model: \"{}\" (the verifier key's description: unauthenticated, anyone can write it)",
                sanitize(&m.description)
            ));
            lines.push(format!(
                "model commitment {} (what the proof is bound to: compare it with the fingerprint the model's publisher gives)",
                m.commitment
            ));
        }
        lines.push(match self.softmax {
            SoftmaxMode::Exponential(p) => format!(
                "softmax: {} (probabilities × 2^{}, rows sum to 2^{} ± {}; {})",
                softmax_spec(self.softmax),
                p.output_bits,
                p.output_bits,
                p.tolerance(),
                self.softmax_source.words()
            ),
            SoftmaxMode::Identity => {
                format!("softmax: linear (not proven; {})", self.softmax_source.words())
            }
        });
        if let Some(statement) = &self.statement {
            lines.extend(statement_lines(statement));
        }
        let commitments: Vec<String> = self.commitments.iter().map(|(k, v)| format!("{k} {v}")).collect();
        lines.push(format!(
            "commitments{} (BLAKE3 of the encoding, 128 bits): {}",
            if self.kind.is_zero_knowledge() { ", hiding" } else { "" },
            commitments.join(", ")
        ));
        let (name, rows, columns, digest) = &self.output;
        lines.push(format!("output {name} ({rows} × {columns}): BLAKE3 {digest}"));
        if let Some(file) = &self.output_file {
            lines.push(format!("wrote the proven output {name} to {file}"));
        }
        lines.push(match self.setup_ms {
            Some(setup) => {
                format!("verified in {:.2} ms (+ {setup:.2} ms deriving the generators)", self.verify_ms)
            }
            None => format!("verified in {:.2} ms", self.verify_ms),
        });
        lines
    }

    /// Prints the report.
    pub fn print(&self, json: bool) {
        if json {
            println!("{}", self.to_json());
        } else {
            for line in self.to_text() {
                println!("{line}");
            }
        }
    }
}

/// What a verifier accepted as JSON ([`zkmha_api::Verified::statement_json`]), the key's
/// description (the model owner's words) escaped as every description the command line prints.
pub fn statement_json(verified: &zkmha_api::Verified) -> Value {
    let mut value = verified.statement_json();
    if let (Some(key), Some(description)) = (&verified.key, value.pointer_mut("/key/description")) {
        *description = json!(sanitize(&key.description));
    }
    value
}

/// What a verifier accepted beyond the shape, as lines: the key and the input.
pub fn statement_lines(verified: &zkmha_api::Verified) -> Vec<String> {
    let mut lines = Vec::new();
    if let Some(key) = &verified.key {
        lines.push(format!(
            "verifier key {} (the proof is bound to it: compare it with the fingerprint the model's publisher gives)",
            key.fingerprint
        ));
    }
    lines.push(match &verified.input {
        zkmha_api::ProvenInput::TokenIds(ids) => {
            format!("input: the token ids {ids:?}, proven through the key's embedding table")
        }
        zkmha_api::ProvenInput::CommittedHiddenState { commitment } => format!(
            "input: a hidden state the prover committed to ({commitment}), not proven from token ids (zkmha verify --tokens refuses it)"
        ),
        zkmha_api::ProvenInput::CommittedAttentionInputs { .. } => {
            "input: the Q, K, V the prover committed to (their commitments below), not proven from token ids".into()
        }
    });
    lines
}

/// Prints each fidelity warning on stderr, `warning: …` (stdout keeps the report or the JSON
/// object, which lists them under `"warnings"`).
pub fn print_warnings(warnings: &[zkmha_api::fidelity::FidelityWarning]) {
    for warning in warnings {
        eprintln!("warning: {warning}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use zkmha_attention::SoftmaxParams;

    #[test]
    fn untrusted_text_is_escaped() {
        assert_eq!(sanitize("model.gguf layer 0 (llama)"), "model.gguf layer 0 (llama)");
        assert_eq!(sanitize("a\u{1b}[2Jb\r\n"), "a\\u{1b}[2Jb\\u{d}\\u{a}");
        assert_eq!(sanitize("x\\u{1b}"), "x\\\\u{1b}", "a literal escape stays distinguishable");
        assert_eq!(sanitize("evil\u{202e}txt.exe"), "evil\\u{202e}txt.exe");
        assert_eq!(sanitize("\u{7f}\u{9b}"), "\\u{7f}\\u{9b}");
        let long = "é".repeat(250);
        assert!(sanitize(&long).ends_with("… (50 more characters)"));
    }

    #[test]
    fn softmax_specs_round_trip_in_any_order() {
        let params = SoftmaxParams::for_score_scale(0.01, 16).unwrap_or_else(|e| unreachable!("{e}"));
        let spec = softmax_spec(SoftmaxMode::Exponential(params));
        assert_eq!(parse_softmax_spec(&spec).map(|s| s.0), Ok(spec.clone()));
        let reordered = format!(
            "tolerance_bits={}, output_bits={},exponent_bits={},shift={},multiplier={}",
            params.tolerance_bits, params.output_bits, params.exponent_bits, params.shift, params.multiplier
        );
        assert_eq!(parse_softmax_spec(&reordered).map(|s| s.0), Ok(spec));
        assert_eq!(parse_softmax_spec("linear").map(|s| s.0), Ok("linear".into()));
        for (bad, needle) in [
            ("multiplier=1", "shift is missing"),
            ("multiplier=1,multiplier=2", "named twice"),
            ("scale=3", "unknown softmax parameter 'scale'"),
            ("multiplier=-1", "not a whole number"),
            ("exp", "not name=value"),
        ] {
            let error = parse_softmax_spec(bad).err().unwrap_or_default();
            assert!(error.contains(needle), "{bad}: {error}");
        }
    }

    #[test]
    fn only_the_expected_or_named_softmax_is_accepted() {
        let default = SoftmaxParams::for_score_scale(0.01, 16).unwrap_or_else(|e| unreachable!("{e}"));
        let mut other = default;
        other.tolerance_bits = 15;
        let (default, other) = (SoftmaxMode::Exponential(default), SoftmaxMode::Exponential(other));
        let source = SoftmaxSource::Default;
        assert_eq!(accept_softmax(default, default, source, None), Ok(SoftmaxSource::Default));
        let refused = accept_softmax(other, default, source, None);
        let text = refused.as_ref().err().map(ToString::to_string).unwrap_or_default();
        assert!(text.contains(&format!("pass --softmax-params {}", softmax_spec(other))), "{text}");
        assert!(matches!(refused, Err(Verdict::Refused(_))));
        let named = parse_softmax_spec(&softmax_spec(other)).unwrap_or_else(|e| unreachable!("{e}"));
        assert_eq!(accept_softmax(other, default, source, Some(&named)), Ok(SoftmaxSource::Named));
        // Naming one softmax refuses every other, the default included.
        assert!(matches!(accept_softmax(default, default, source, Some(&named)), Err(Verdict::Refused(_))));
        let linear = parse_softmax_spec("linear").unwrap_or_else(|e| unreachable!("{e}"));
        assert!(accept_softmax(SoftmaxMode::Identity, default, source, None).is_err());
        assert_eq!(
            accept_softmax(SoftmaxMode::Identity, default, source, Some(&linear)),
            Ok(SoftmaxSource::Named)
        );
    }
}
