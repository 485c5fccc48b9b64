//! How often a whole model's integer forward pass — what `zkmha prove --layers all` proves —
//! picks float64's next token, without proving it.
//!
//! ```text
//! cargo run --release -p zkmha-api --example next_tokens -- MODEL TEXT_FILE
//! ```
//!
//! Commits every layer as `zkmha commit-model --layers all` does (the calibration is the
//! key's), runs [`chain_accuracy`] on the text's tokens (the model's tokenizer, the file's
//! text as it is) with every position's logits, and prints the positions that disagree with
//! float64, with float64's margin between its two best tokens there.

use std::path::Path;

use zkmha_api::model_chain::{LogitPositions, chain_accuracy, commit_chain, open_layers};
use zkmha_api::{ModelInput, ModelOptions, WeightCommitments};
use zkmha_attention::model_quantization::float_norm;

type Failure = Box<dyn std::error::Error>;

fn main() -> Result<(), Failure> {
    let args: Vec<String> = std::env::args().collect();
    let usage = "usage: next_tokens MODEL TEXT_FILE";
    let path = Path::new(args.get(1).ok_or(usage)?);
    // As `--text "$(cat FILE)"` reads it: the trailing newlines dropped.
    let text = std::fs::read_to_string(args.get(2).ok_or(usage)?)?.trim_end_matches('\n').to_string();
    let first = zkmha_api::Model::open(path, &ModelOptions::default())?;
    let layers = first.file().layer_count().ok_or("the model file does not say its layer count")?;
    let models = open_layers(path, &ModelOptions::default(), 0..layers)?;
    let committed = commit_chain(&models, WeightCommitments::Binding, &mut |_, _| {})?;
    let measure = chain_accuracy(&committed.key, &models, &ModelInput::Text(text), LogitPositions::All)?;
    let logits = measure.logits.ok_or("the chain has no head")?;
    let reference = logits.reference.as_ref().ok_or("no float64 logits")?;
    let (same, error) = logits.against_reference().ok_or("no float64 logits")?;
    let v = logits.vocabulary;
    for (p, (ours, float)) in logits.values.chunks(v).zip(reference.chunks(v)).enumerate() {
        let mut order: Vec<usize> = (0..v).collect();
        order.sort_by(|&a, &b| float[b].total_cmp(&float[a]));
        let (best, second) = (order[0], order[1]);
        let predicted = logits.predicted[p];
        if predicted != best {
            println!(
                "position {p}: float64 {best} ({:.4}, margin {:.4} over {second}), ours {predicted} ({:.4} vs {:.4} for {best})",
                float[best],
                float[best] - float[second],
                ours[predicted],
                ours[best],
            );
        }
    }
    println!(
        "{} tokens: same next token {same} / {}, logits {:.3} %, last hidden state {:.3} %",
        logits.positions.len(),
        logits.positions.len(),
        100.0 * error,
        100.0 * measure.accuracy.output.relative_l2_error,
    );
    // The proven last hidden state through the float64 head: how much of the logits' error the
    // hidden state brings, and how much the integer head adds.
    let last = models.last().ok_or("no layers")?;
    let (norm, epsilon) = last.final_norm()?;
    let table = last.embedding_tables()?.ok_or("no embedding table")?.tokens;
    let d = last.model_width();
    let normalized = float_norm(&norm, epsilon, &measure.output, d);
    let float_head: Vec<f64> = normalized
        .chunks(d)
        .flat_map(|y| table.chunks(d).map(move |t| y.iter().zip(t).map(|(a, b)| a * b).sum::<f64>()))
        .collect();
    let relative = |a: &[f64], b: &[f64]| {
        let difference: f64 = a.iter().zip(b).map(|(x, y)| (x - y) * (x - y)).sum();
        (difference / b.iter().map(|y| y * y).sum::<f64>()).sqrt()
    };
    println!(
        "the proven last hidden state through the float64 head: logits {:.3} % from float64's, the integer head {:.3} % from it",
        100.0 * relative(&float_head, reference),
        100.0 * relative(&logits.values, &float_head),
    );
    let errors: Vec<String> = measure.layer_errors.iter().map(|e| format!("{:.3}", 100.0 * e)).collect();
    println!("boundaries (%): {}", errors.join(" "));
    Ok(())
}
