//! The bound behind the exact gated product (the fresh-context review of 2026-11-27):
//! `|A| ≤ 2^(b−1−a+o) + 1` and `|A|·|U| < 2^31` for every shape `MlpShape::validate` accepts,
//! checked against the activation table's own formula over every table entry.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use zkmha_attention::activation::Activation;
use zkmha_attention::mlp::{GatedProduct, MlpParams};

#[test]
fn review_every_validated_gated_shape_keeps_the_product_below_2_31() {
    let mut checked = 0u64;
    let mut worst = 0f64;
    for activation in [Activation::GeluErf, Activation::GeluTanh, Activation::Silu] {
        for b in 1..=16u32 {
            for a in 0..=24u32 {
                for o in 0..=24u32 {
                    let base = MlpParams {
                        hidden: 4,
                        activation,
                        activation_input_fraction_bits: a,
                        activation_output_fraction_bits: o,
                        activation_input_bits: b,
                        up_shift: 4,
                        gate: Some(GatedProduct { gate_shift: 4, up_bits: 1 }),
                        down_shift: 20,
                    };
                    // The widest accepted up range.
                    let Some(up_bits) = (1..=16u32).rev().find(|&up| {
                        let p = MlpParams { gate: Some(GatedProduct { gate_shift: 4, up_bits: up }), ..base };
                        p.shape(2, 4, None).validate().is_ok()
                    }) else {
                        continue;
                    };
                    // The table's formula (activation.rs ActivationShape::table) over every entry.
                    let half = 1i64 << (b - 1);
                    let mut max_a = 0i64;
                    for g in -half..half {
                        let x = g as f64 * 2f64.powi(-(a as i32));
                        let v = (activation.apply(x) * 2f64.powi(o as i32)).round() as i64;
                        max_a = max_a.max(v.abs());
                    }
                    let m = i64::from(b) - 1 - i64::from(a) + i64::from(o);
                    let doc_bound = 2f64.powi(m as i32) + 1.0;
                    assert!(
                        (max_a as f64) <= doc_bound,
                        "{activation:?} b={b} a={a} o={o}: |A| = {max_a} > 2^{m} + 1"
                    );
                    let product = i128::from(max_a) * (1i128 << (up_bits - 1));
                    assert!(
                        product < 1i128 << 31,
                        "{activation:?} b={b} a={a} o={o} up_bits={up_bits}: |A|·|U| = {product} ≥ 2^31"
                    );
                    worst = worst.max(product as f64);
                    checked += 1;
                }
            }
        }
    }
    eprintln!("{checked} accepted parameter sets; the largest |A|·|U| is {worst} (2^31 = {})", 1u64 << 31);
}
