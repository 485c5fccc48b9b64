//! Where a chain's accuracy goes: each layer's own error, step by step (pre-norm layers with
//! their MLP: GPT-2, Llama).
//!
//! ```text
//! cargo run --release -p zkmha-api --example step_errors -- MODEL TEXT_FILE [LAYERS]
//! ```
//!
//! Commits the model's first `LAYERS` layers (all by default) as `zkmha commit-model --layers`
//! does, runs the proven integer forward pass on the text's tokens (the model's tokenizer),
//! and at every layer compares:
//! - the boundary with float64 through the same layers from the same embeddings (`chain`);
//! - the layer with float64 from the layer's own dequantized integer input (`own`, relative
//!   and as an absolute L2 norm in the residual stream's units);
//! - each half with float64 from its own integer input: the attention half (`attention`,
//!   `X = norm(H)` included) and the MLP half (`mlp`, `X₂ = norm₂(Z)` included);
//! - inside the MLP, how far `Y₂` moves (absolute L2) when one more step is taken from the
//!   integers instead of float64: the pre-activation projections (`U`, `G`: weights and
//!   rounding), the activation's table (`A`), and the down projection (`W_down` and its
//!   rounding; gated MLPs: the exact product `A ⊙ U` feeds it).
//!
//! Used for `docs/ACCURACY.md` (SmolLM2's rounded gated product was found this way).

use std::path::Path;

use zkmha_api::model_chain::{commit_chain, open_layers};
use zkmha_api::{ModelOptions, WeightCommitments};
use zkmha_attention::block::{block_output, normalized_input};
use zkmha_attention::mlp::{MlpProjection, compute_mlp};
use zkmha_attention::model_layer::{ModelShape, ModelWeights};
use zkmha_attention::model_quantization::{FloatModelWeights, float_norm, reference_model_layer};
use zkmha_attention::norm::compute_norm;

type Failure = Box<dyn std::error::Error>;

/// `‖a − b‖ / ‖b‖`.
fn relative(a: &[f64], b: &[f64]) -> f64 {
    let norm = b.iter().map(|y| y * y).sum::<f64>().sqrt();
    if norm == 0.0 { absolute(a, b) } else { absolute(a, b) / norm }
}

/// `‖a − b‖`.
fn absolute(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| (x - y) * (x - y)).sum::<f64>().sqrt()
}

/// Integers at `2^bits` as reals.
fn real(values: &[i64], bits: i32) -> Vec<f64> {
    let unit = 2f64.powi(-bits);
    values.iter().map(|&v| v as f64 * unit).collect()
}

/// `x·W + b` (`rows × inputs` times `inputs × outputs`).
fn affine(x: &[f64], rows: usize, inputs: usize, w: &[f64], b: &[f64]) -> Vec<f64> {
    let outputs = b.len();
    let mut out = vec![0.0; rows * outputs];
    for (i, row) in out.chunks_mut(outputs.max(1)).enumerate().take(rows) {
        row.copy_from_slice(b);
        for j in 0..inputs {
            let v = x[i * inputs + j];
            for (o, w) in row.iter_mut().zip(&w[j * outputs..(j + 1) * outputs]) {
                *o += v * w;
            }
        }
    }
    out
}

/// One layer's errors.
struct LayerErrors {
    own: f64,
    own_absolute: f64,
    attention_absolute: f64,
    mlp_absolute: f64,
    /// `Y₂`'s moves: pre-activation, activation, down projection.
    mlp_steps: [f64; 3],
    x: f64,
    x2: f64,
    output: Vec<i64>,
}

/// The layer's integer forward pass on `hidden` (at `2^f_h`) against float64, step by step.
fn layer_errors(
    key: &zkmha_api::ModelVerifierKey,
    model: &zkmha_api::Model,
    hidden: &[i64],
    tokens: usize,
) -> Result<LayerErrors, Failure> {
    let q = &key.quantization;
    let (f_h, f_x) = (q.hidden_fraction_bits, q.input_fraction_bits);
    let d = model.model_width();
    let shape = key.shape(tokens)?;
    let softmax = q.softmax(&shape.attention)?;
    let weights = q.quantize_weights(model.float_weights())?;
    let float = model.float_weights();
    let epsilon = model.file().norm_epsilon;
    let h = real(hidden, f_h);
    // The attention half alone: X = norm(H), Z = H + attention(X).
    let x_int = normalized_input(&shape, &weights, hidden)?;
    let x = real(&x_int, f_x);
    let x_float = float_norm(float.norm.as_ref().ok_or("the layer has no proven norm")?, epsilon, &h, d);
    let attention_shape = ModelShape { mlp: None, ..shape };
    let attention_weights = ModelWeights { feed_forward: None, ..weights.clone() };
    let z_int = block_output(&attention_shape, key.mask, softmax, &x_int, Some(hidden), &attention_weights)?;
    let z = real(&z_int, f_h);
    let attention_float = FloatModelWeights { feed_forward: None, ..float.clone() };
    let z_float =
        reference_model_layer(&attention_shape, key.mask, &attention_float, &x_float, Some(&h), epsilon)?;
    // The MLP half alone: X₂ = norm₂(Z), Y₂ = MLP(X₂).
    let mlp = shape.mlp.ok_or("the layer has no proven MLP")?;
    let mlp_quantization = q.mlp.ok_or("the layer has no proven MLP")?;
    let integer = weights.feed_forward.as_ref().ok_or("the layer has no MLP weights")?;
    let ff = float.feed_forward.as_ref().ok_or("the layer has no MLP weights")?;
    let x2_int = compute_norm(
        &shape.mlp_norm_shape().ok_or("no MLP norm")?,
        &z_int,
        &integer.norm.scale,
        &integer.norm.bias,
    )?;
    let x2 = real(&x2_int, f_x);
    let x2_float = float_norm(&ff.norm, epsilon, &z, d);
    let witness = compute_mlp(&shape.mlp_shape().ok_or("no MLP shape")?, &x2_int, &integer.mlp)?;
    let p = mlp.params;
    let n = p.hidden;
    let [f_up, f_gate, _] = mlp_quantization.weight_fraction_bits;
    let projected = |projection: MlpProjection| -> Result<&[i64], Failure> {
        Ok(&witness.projection(projection).ok_or("a projection is missing")?.output)
    };
    let activation = |v: &[f64]| -> Vec<f64> { v.iter().map(|&x| p.activation.apply(x)).collect() };
    let times = |a: &[f64], b: &[f64]| -> Vec<f64> { a.iter().zip(b).map(|(a, b)| a * b).collect() };
    let down = |v: &[f64]| affine(v, tokens, n, &ff.mlp.down.weights, &ff.mlp.down.bias);
    let up_float = affine(&x2, tokens, d, &ff.mlp.up.weights, &ff.mlp.up.bias);
    let up = real(projected(MlpProjection::Up)?, f_x + f_up - p.up_shift as i32);
    let a_bits = p.activation_output_fraction_bits as i32;
    let activated = real(&witness.activation.output, a_bits);
    // Y₂ in float64 from X₂, then with U (and G) from the integers, then A too.
    let (all_float, pre_activation, after_activation) = match (&p.gate, &ff.mlp.gate) {
        (None, None) => (down(&activation(&up_float)), down(&activation(&up)), down(&activated)),
        (Some(gate), Some(gate_weights)) => {
            let gate_float = affine(&x2, tokens, d, &gate_weights.weights, &gate_weights.bias);
            let g = real(projected(MlpProjection::Gate)?, f_x + f_gate - gate.gate_shift as i32);
            (
                down(&times(&activation(&gate_float), &up_float)),
                down(&times(&activation(&g), &up)),
                down(&times(&activated, &up)),
            )
        }
        _ => return Err("the MLP's shape and weights disagree on the gate".into()),
    };
    let y2 = real(witness.output(), f_h);
    let output: Vec<i64> = z_int.iter().zip(witness.output()).map(|(z, y)| z + y).collect();
    let own_float = model.float_output(h.clone())?;
    let ours = real(&output, f_h);
    Ok(LayerErrors {
        own: relative(&ours, &own_float),
        own_absolute: absolute(&ours, &own_float),
        attention_absolute: absolute(&z, &z_float),
        mlp_absolute: absolute(&y2, &all_float),
        mlp_steps: [
            absolute(&pre_activation, &all_float),
            absolute(&after_activation, &pre_activation),
            absolute(&y2, &after_activation),
        ],
        x: relative(&x, &x_float),
        x2: relative(&x2, &x2_float),
        output,
    })
}

fn main() -> Result<(), Failure> {
    let args: Vec<String> = std::env::args().collect();
    let usage = "usage: step_errors MODEL TEXT_FILE [LAYERS]";
    let path = Path::new(args.get(1).ok_or(usage)?);
    let text = std::fs::read_to_string(args.get(2).ok_or(usage)?)?;
    let first = zkmha_api::Model::open(path, &ModelOptions::default())?;
    let layers = match args.get(3) {
        Some(n) => n.parse::<usize>()?,
        None => first.file().layer_count().ok_or("the model file does not say its layer count")?,
    };
    let models = open_layers(path, &ModelOptions::default(), 0..layers)?;
    let committed = commit_chain(&models, WeightCommitments::Binding, &mut |_, _| {})?;
    let ids = first.file().tokenizer()?.encode(&text)?;
    let tokens = ids.len();
    let embedded = first.embed(&ids)?;
    let start = committed.key.layers.first().ok_or("no layers")?;
    let mut hidden = start.quantization.quantize_hidden_state(&embedded)?;
    let mut float = embedded;
    println!("{tokens} tokens, {layers} layers, f_h = {}", start.quantization.hidden_fraction_bits);
    println!(
        "layer | chain | own | ‖own‖ | ‖attention‖ | ‖mlp‖ | mlp: ‖pre-activation‖ ‖activation‖ ‖down‖ | X | X₂ | ‖H'‖"
    );
    for (key, model) in committed.key.layers.iter().zip(&models) {
        let e = layer_errors(key, model, &hidden, tokens)?;
        float = model.float_output(float)?;
        let ours = real(&e.output, key.quantization.hidden_fraction_bits);
        let norm = ours.iter().map(|v| v * v).sum::<f64>().sqrt();
        println!(
            "{:>2} | {:.3} % | {:.3} % | {:.2} | {:.2} | {:.2} | {:.2} {:.2} {:.2} | {:.3} % | {:.3} % | {:.0}",
            model.layer(),
            100.0 * relative(&ours, &float),
            100.0 * e.own,
            e.own_absolute,
            e.attention_absolute,
            e.mlp_absolute,
            e.mlp_steps[0],
            e.mlp_steps[1],
            e.mlp_steps[2],
            100.0 * e.x,
            100.0 * e.x2,
            norm,
        );
        hidden = e.output;
    }
    Ok(())
}
