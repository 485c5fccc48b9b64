//! Consecutive layers of a model chained into one inference: each layer's proof is made on
//! its own (in any order, on any machine) from the committed boundary activations it joins,
//! and the chain verifies when every proof verifies against its layer's key and the
//! commitments meet.
//!
//! ```text
//! boundaries  H_a, H_{a+1}, …, H_b   (s × d_model, the residual stream at one scale 2^f_h),
//!             committed once by whoever runs the forward pass (block::commit_boundary)
//! link ℓ      statement ℓ: residual C(H_ℓ), output C(H_{ℓ+1}) committed (LayerOutput::
//!             Committed); the last layer's output H_b public, or committed when a head
//!             follows (crate::head: the final norm and the logits from C(H_b))
//! chain       every statement on the same s tokens and d_model (the first layer's);
//!             for a < ℓ ≤ b−1: statement ℓ's boundary — its residual C(H_ℓ) (pre-norm), or its
//!             input C(X_ℓ) (post-norm, BERT: X_ℓ the previous layer's normed output) — is
//!             byte-equal to statement ℓ−1's output commitment; every layer's key has the same
//!             f_h (the boundary is read at one scale on both sides), the same d_model, one
//!             residual kind (pre-norm, or post-norm with its output's norm); every proof
//!             verifies against its own layer's key (crate::verifier_key::verify_with_key),
//!             the layers' final group equations checked together in one MSM
//!             (zkmha_zk::check_together: each layer's weighted again after all are fixed)
//! ```
//!
//! The commitments are the link: a proof of layer `ℓ` that starts from another hidden state,
//! or a layer's proof put in another's place (swapped, repeated), fails by name
//! ([`AttentionError::BrokenChain`]) or against the wrong layer's key. A boundary's padding is
//! carried through the chain: inside a layer `H' = Z + Y₂` and `Z = H + Y` hold on the whole
//! padded grid, with `Y` and `Y₂` zero on the padding, so the padding of `H_{ℓ+1}` is that of
//! `H_ℓ`. It is pinned to zero from either end: at the start by an embedding proof (a chain
//! from token ids: [`crate::embedding`] shows `H_0` zero on its padded rows, and on its padded
//! columns as the committed table is), or at the end by the last layer's public, zero-padded
//! output. A chain from a committed hidden state to a head (this module allows it;
//! `zkmha_api::model_chain` proves a head from token ids only) would pin neither: the
//! boundaries' padding is then the prover's (range-checked by the norms that read it, not
//! zeroed), and the head reads the last boundary only through its norm, whose output is zero
//! on the padding and whose relations are restricted to the real entries ([`crate::norm`]).
//! All of this holds
//! because every layer is proven on the same `s` tokens, which the links check: a layer of
//! fewer tokens pads to the same grid as one of more, and would leave the tokens beyond its
//! length in the padding, never applied to them.
//!
//! Where a chain starts and ends (`zkmha_api::model_chain`): from public token ids, `H_0`'s
//! commitment proven to hold the embedding table's rows for them ([`crate::embedding`]), or
//! from a committed hidden state `H_a` that is the prover's input (as a single layer's `H`
//! is); at the last layer's public output `H_b`, or — from token ids, with a key that holds
//! the model's head — at a head ([`crate::head`]: the final norm and the logits of public
//! positions proven from the committed `H_b`, which stays committed).

use crate::block::{ModelBlockProof, Pending};
use crate::mode::Mode;
use crate::model_layer::{LayerOutput, ModelCommitment, ModelStatement, OutputKind};
use crate::verifier_key::{ModelVerifierKey, verify_with_key_pending};
use crate::{AttentionError, Residual, VerifierTimings};

/// The most layers one chain may hold (a stated limit, checked before anything is read
/// from a chain's proofs; Llama-3-70B has 80).
pub const MAX_CHAIN_LAYERS: usize = 1024;

/// One layer's proof in a chain, with its statement.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChainLink<M: Mode> {
    /// The statement: its residual and (but for the last) its output are boundary
    /// commitments. Its weight commitments ([`ModelStatement::model`]) may be left empty
    /// ([`ChainLink::without_weight_commitments`]): they are then the layer key's, which
    /// the verifier holds anyway.
    pub statement: ModelStatement,
    /// The layer's proof.
    pub proof: ModelBlockProof<M>,
}

impl<M: Mode> ChainLink<M> {
    /// The link as a chain's proof carries it: without its statement's weight commitments
    /// (every layer's, ~200 KB for a GPT-2-small layer, are in the chain's key already). The
    /// verifier puts the layer key's in their place, so the proof is checked against the same
    /// statement — the transcript absorbs the key's commitments — and a link proven with
    /// other weights fails against the key's as before.
    pub fn without_weight_commitments(mut self) -> Self {
        self.statement.model = ModelCommitment { tables: Vec::new() };
        self
    }
}

/// Checks that the keys can be chained: at most [`MAX_CHAIN_LAYERS`], at least one, every
/// layer pre-norm, or every layer post-norm (BERT: its residual on `X`, the norm on its output
/// proven), with the same `d_model` and the same residual stream scale `f_h`.
///
/// # Errors
/// [`AttentionError::BrokenChain`] naming the first layer (counted from the chain's first)
/// that differs.
#[deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used, clippy::panic)]
pub fn check_chain_keys(keys: &[ModelVerifierKey]) -> Result<(), AttentionError> {
    let Some(first) = keys.first() else {
        return Err(AttentionError::BrokenChain { layer: 0, reason: "a chain holds at least one layer" });
    };
    if keys.len() > MAX_CHAIN_LAYERS {
        return Err(AttentionError::BrokenChain { layer: MAX_CHAIN_LAYERS, reason: "too many layers" });
    }
    for (layer, key) in keys.iter().enumerate() {
        let chains = match key.residual {
            Residual::HiddenState => true,
            Residual::LayerInput => key.quantization.post_norm.is_some(),
        };
        let reason = if !chains {
            Some(
                "its residual adds to its input X without a norm on its output: only pre-norm and post-norm layers chain",
            )
        } else if key.residual != first.residual {
            Some(
                "its residual is of another kind than the first layer's (pre-norm and post-norm layers do not mix)",
            )
        } else if key.model_width != first.model_width {
            Some("its d_model differs from the first layer's")
        } else if key.quantization.hidden_fraction_bits != first.quantization.hidden_fraction_bits {
            Some("its residual stream scale f_h differs from the first layer's")
        } else if key.weight_commitments != first.weight_commitments {
            Some("its weight commitments are of the other kind")
        } else {
            None
        };
        if let Some(reason) = reason {
            return Err(AttentionError::BrokenChain { layer, reason });
        }
    }
    Ok(())
}

/// Checks how the statements meet, before any proof is verified: one per layer, every output
/// but the last committed and byte-equal to the next layer's boundary commitment (its residual
/// `H`, or a post-norm layer's input `X`), the last output public.
///
/// # Errors
/// [`AttentionError::BrokenChain`] naming the first layer (counted from the chain's first)
/// where the chain breaks.
#[deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used, clippy::panic)]
pub fn check_links<'s>(
    statements: impl ExactSizeIterator<Item = &'s ModelStatement>,
    layers: usize,
) -> Result<(), AttentionError> {
    check_links_ending(statements, layers, OutputKind::Public)
}

/// [`check_links`] for a chain whose last output is of kind `last`: public, or committed for
/// a head that follows the chain ([`crate::head`]: the model's final norm and logits, proven
/// from the last boundary's commitment).
///
/// # Errors
/// As [`check_links`].
#[deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used, clippy::panic)]
pub fn check_links_ending<'s>(
    statements: impl ExactSizeIterator<Item = &'s ModelStatement>,
    layers: usize,
    last_output: OutputKind,
) -> Result<(), AttentionError> {
    if layers == 0 {
        return Err(AttentionError::BrokenChain { layer: 0, reason: "a chain holds at least one layer" });
    }
    if statements.len() != layers {
        return Err(AttentionError::BrokenChain {
            layer: statements.len().min(layers),
            reason: "the chain has another number of layer proofs than its key has layers",
        });
    }
    let mut previous: Option<&ModelStatement> = None;
    let mut first: Option<&ModelStatement> = None;
    for (layer, statement) in statements.enumerate() {
        let last = layer + 1 == layers;
        let first = *first.get_or_insert(statement);
        // Every layer on the same tokens: layers of other lengths can pad to one grid, so
        // their boundaries' commitments can be byte-equal while a layer leaves the tokens
        // beyond its own length in the padding, never applied to them (the review of
        // 2026-11-26 built it: a 5-token layer 0 under an 8-token layer 1 verified).
        let same_tokens = statement.shape.attention.seq_len == first.shape.attention.seq_len
            && statement.shape.model_width == first.shape.model_width;
        // The boundary a layer starts from: a pre-norm layer's hidden state H, a post-norm
        // layer's input X (the previous layer's normed output).
        // Chosen by the shape's residual kind, not by which commitments the statement holds
        // (a post-norm statement with a residual commitment is malformed: its validation
        // refuses it, and the links never read that commitment).
        let boundary = match (statement.shape.residual, statement.shape.post_norm) {
            (Residual::HiddenState, _) => statement.residual.as_ref(),
            // A post-norm layer proving the norm from H to X (BERT's layer 0: the embeddings'
            // LayerNorm) starts from H.
            (Residual::LayerInput, Some(_)) if statement.shape.norm.is_some() => statement.residual.as_ref(),
            (Residual::LayerInput, Some(_)) => Some(&statement.input),
            (Residual::LayerInput, None) => None,
        };
        let joined = match (boundary, previous.map(|p| &p.output)) {
            _ if !same_tokens => Some(
                "it is proven on another number of tokens (or another width) than the chain's first layer",
            ),
            _ if statement.shape.residual != first.shape.residual => {
                Some("its residual is of another kind than the first layer's")
            }
            (None, _) => Some("it has no committed boundary: only pre-norm and post-norm layers chain"),
            (Some(input), Some(LayerOutput::Committed(output))) if input != output => {
                Some(match statement.shape.residual {
                    Residual::HiddenState => "its hidden state is not the previous layer's committed output",
                    Residual::LayerInput => "its input X is not the previous layer's committed output",
                })
            }
            _ => None,
        };
        let reason = joined.or(match (&statement.output, last, last_output) {
            (LayerOutput::Public(_), false, _) => Some("its output is public, but it is not the last layer"),
            (LayerOutput::Committed(_), true, OutputKind::Public) => {
                Some("the last layer's output is committed, not public")
            }
            (LayerOutput::Public(_), true, OutputKind::Committed) => {
                Some("the last layer's output is public, but a head follows it: it must be committed")
            }
            _ => None,
        });
        if let Some(reason) = reason {
            return Err(AttentionError::BrokenChain { layer, reason });
        }
        previous = Some(statement);
    }
    Ok(())
}

/// Verifies a chain of layer proofs in mode `M` against its layers' keys (`keys[i]` is the
/// key of the chain's `i`-th layer): [`check_chain_keys`], [`check_links`], then every proof
/// against its own key.
///
/// # Errors
/// [`AttentionError::BrokenChain`]; [`AttentionError::InChainLayer`] wrapping the first
/// layer proof, in order, that fails a check before its final group equations, or else the
/// first whose final group equations fail (they are checked for all layers at once, last).
#[deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used, clippy::panic)]
pub fn verify_chain<M: Mode>(
    keys: &[ModelVerifierKey],
    links: &[ChainLink<M>],
) -> Result<Vec<VerifierTimings>, AttentionError> {
    verify_chain_ending(keys, links, OutputKind::Public)
}

/// [`verify_chain`] for a chain whose last output is of kind `last_output`
/// ([`check_links_ending`]).
///
/// # Errors
/// As [`verify_chain`].
#[deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used, clippy::panic)]
pub fn verify_chain_ending<M: Mode>(
    keys: &[ModelVerifierKey],
    links: &[ChainLink<M>],
    last_output: OutputKind,
) -> Result<Vec<VerifierTimings>, AttentionError> {
    check_chain_keys(keys)?;
    check_links_ending(links.iter().map(|l| &l.statement), keys.len(), last_output)?;
    let in_layer =
        |layer: usize| move |source| AttentionError::InChainLayer { layer, source: Box::new(source) };
    let verify = |(layer, (key, link)): (usize, (&ModelVerifierKey, &ChainLink<M>))| {
        // Weight commitments left out are the key's (ChainLink::without_weight_commitments).
        let result = if link.statement.model.tables.is_empty() {
            let statement = ModelStatement { model: key.commitment.clone(), ..link.statement.clone() };
            verify_with_key_pending(key, &statement, &link.proof)
        } else {
            verify_with_key_pending(key, &link.statement, &link.proof)
        };
        result.map_err(in_layer(layer))
    };
    // The layers are independent once the links hold: verified side by side (each layer's
    // own MSMs leave cores idle between them), the first layer in order failing a check
    // before its final group equations reported, as the sequential twin below reports it.
    let results: Vec<Result<(VerifierTimings, Pending<M>), AttentionError>> =
        if links.len() >= PARALLEL_LAYERS {
            use rayon::prelude::*;
            keys.par_iter().zip(links.par_iter()).enumerate().map(verify).collect()
        } else {
            keys.iter().zip(links).enumerate().map(verify).collect()
        };
    let (mut timings, pending): (Vec<VerifierTimings>, Vec<M::PendingChecks>) = results
        .into_iter()
        .collect::<Result<Vec<_>, _>>()?
        .into_iter()
        .map(|(timings, Pending(pending))| (timings, pending))
        .unzip();
    // Every layer's final group equations in one MSM: the layers share their commitment
    // generators, so it has about half the bases of one MSM per layer (94 k against 185 k for
    // GPT-2-small's twelve). A failure names the first layer whose own equations fail — after
    // every layer's other checks have passed: a layer failing one of those is named first.
    let start = std::time::Instant::now();
    M::check_pending(pending).map_err(|(layer, error)| in_layer(layer)(error))?;
    if let Some(last) = timings.last_mut() {
        last.protocol += start.elapsed();
    }
    Ok(timings)
}

/// The fewest layers verified in parallel.
const PARALLEL_LAYERS: usize = 2;
