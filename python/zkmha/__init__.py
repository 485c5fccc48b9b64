"""zkmha: zero-knowledge proofs of a transformer's attention layer.

Prove and verify a model layer in five lines::

    import zkmha
    zkmha.commit_model("model.gguf", "model.vk")            # the key to publish, its secret beside it
    z = zkmha.prove("model.gguf", "model.vk", "layer.proof", tokens=[1, 2, 3])
    verified = zkmha.verify("model.vk", "layer.proof")      # the key and the proof, nothing else
    assert (verified.output == z).all()                     # and verified.input: what it was proven from

Files are written under a temporary name and renamed when complete. Every failure raises a
subclass of ``ZkmhaError``: ``InvalidProof`` (the proof does not verify), ``BadInput`` (an
unreadable, foreign or corrupt file, a value the proof cannot take), ``UnsupportedModel`` (a
model feature the proof does not cover), ``UsageError`` (arguments that do not go together),
``OutOfResources`` (disk or memory), ``RefusedProof`` (a proof of another statement than the one
the caller expects, not verified). ``prove`` warns with ``FidelityWarning`` (a ``UserWarning``)
for a proven output over 1 % from float64.

An attention layer of its own (``zkmha prove`` without ``--model``: integer Q, K, V committed by
the prover) proves and verifies with ``prove_attention`` and ``verify_attention``; a proof of
another softmax than the expected one raises ``RefusedProof``. ``prove_batch`` proves many inputs
on a model loaded once; ``zkmha.distributed`` proves a whole model over a Ray cluster, one task per
layer. Not here: the benchmarks, which the command line has.
"""

import json as _json
import operator as _operator
import os as _os
from os import PathLike as _PathLike
from typing import Any, Dict, Optional, Sequence, Tuple, Union

import numpy as _np

from . import _native
from ._native import (
    BadInput,
    InvalidProof,
    OutOfResources,
    RefusedProof,
    FidelityWarning,
    UnsupportedModel,
    UsageError,
    ZkmhaError,
)

__all__ = [
    "commit_model",
    "prove",
    "verify",
    "prove_batch",
    "inspect",
    "prove_attention",
    "verify_attention",
    "Verified",
    "estimate_attention",
    "hidden_state",
    "write_example_model",
    "write_example_llama",
    "ZkmhaError",
    "InvalidProof",
    "BadInput",
    "UnsupportedModel",
    "UsageError",
    "OutOfResources",
    "RefusedProof",
    "FidelityWarning",
]

_Path = Union[str, _PathLike]


def commit_model(
    model_path: _Path,
    key_path: _Path,
    *,
    layer: int = 0,
    layers: Optional[Tuple[int, int]] = None,
    family: Optional[str] = None,
    heads: Optional[int] = None,
    mask: Optional[str] = None,
    transparent: bool = False,
    secret_path: Optional[_Path] = None,
    description: Optional[str] = None,
) -> Dict[str, Any]:
    """Commit to one layer of a GGUF or safetensors model file (GPT-2 and Llama: the whole layer).

    With ``layers=(a, b)``: the chain key of layers ``a`` to ``b − 1`` (one residual stream
    scale for all), for ``prove(..., layers=(a, b))``.

    Writes the verifier key to ``key_path`` and, unless ``transparent`` (binding commitments,
    plain proofs that reveal evaluations of the weights: for debugging), the model secret to
    ``secret_path`` (default: the key's path with ``.secret`` appended; keep it private).
    ``family`` (``"bert"``, ``"gpt2"``, ``"llama"``), ``heads`` and ``mask`` (``"causal"``,
    ``"none"``, ``"sliding:W"``) are for files whose metadata does not say (by default the
    model's own mask for the layer, its sliding window included). Returns what ``inspect`` shows of
    the key, with ``"verifier_key"`` and ``"secret"`` (the paths written). ``description``
    replaces the key's default description (``"layer 0 (llama)"``, never the file's name),
    shown unauthenticated beside every verdict; at most 256 characters.
    """
    return _json.loads(
        _native.commit_model(
            _fspath(model_path, "model_path"),
            _fspath(key_path, "key_path"),
            layer=_whole("layer", layer),
            layers=_layers(layers),
            family=_text("family", family),
            heads=_whole("heads", heads, 1),
            mask=_text("mask", mask),
            transparent=_flag("transparent", transparent),
            secret_path=_fspath(secret_path, "secret_path"),
            description=_text("description", description),
        )
    )


def prove(
    model_path: _Path,
    key_path: _Path,
    proof_path: _Path,
    *,
    tokens: Optional[Sequence[int]] = None,
    text: Optional[str] = None,
    input: Optional[Any] = None,
    layer: int = 0,
    layers: Optional[Tuple[int, int]] = None,
    family: Optional[str] = None,
    heads: Optional[int] = None,
    mask: Optional[str] = None,
    secret_path: Optional[_Path] = None,
    all_positions: bool = False,
    transparent: bool = False,
) -> _np.ndarray:
    """Prove the layer on one input and write the proof to ``proof_path``.

    With ``layers=(a, b)`` and a chain key from ``commit_model(..., layers=(a, b))``: one proof
    of layers ``a`` to ``b − 1``, each layer's input the previous layer's committed output;
    returns the last layer's output. A chain over a whole model (``layers=(0, L)``) from
    ``tokens`` or ``text`` proves the model's head too where it is covered (the final norm and
    the LM head, tied to the embeddings or a table of its own, GPT-2 and Llama models): it returns the proven logits
    (float64, ``positions × vocabulary``) of the last position, or of every position with
    ``all_positions=True``.

    The input is exactly one of ``tokens`` (token ids: layer 0's input is the embeddings),
    ``text`` (tokenized by the model's own tokenizer) or ``input`` (the hidden state entering
    the layer, a ``tokens × d_model`` array of floats). A hiding key (the default of
    ``commit_model``) proves in zero knowledge with its model secret (``secret_path``, by
    default beside the key); a binding key (``commit_model(..., transparent=True)``) proves
    plainly, revealing evaluations of the weights, only with ``transparent=True`` (else
    ``UsageError``, as a hiding key with it). Returns the proven output, float64, ``tokens × d_model``: the
    layer's output H' (GPT-2 and Llama: norm, attention, norm, MLP, both residuals; BERT:
    attention, residual, LayerNorm, MLP, residual, LayerNorm).
    """
    if input is not None:
        try:
            input = _np.ascontiguousarray(input, dtype=_np.float64)
        except (TypeError, ValueError) as error:
            raise BadInput(f"input is not an array of numbers: {error}") from None
        if input.ndim != 2:
            raise UsageError(f"input must be a 2-D array (tokens × d_model), not {input.ndim}-D")
    return _native.prove(
        _fspath(model_path, "model_path"),
        _fspath(key_path, "key_path"),
        _fspath(proof_path, "proof_path"),
        tokens=_tokens(tokens),
        text=_text("text", text),
        input=input,
        layer=_whole("layer", layer),
        layers=_layers(layers),
        family=_text("family", family),
        heads=_whole("heads", heads, 1),
        mask=_text("mask", mask),
        secret_path=_fspath(secret_path, "secret_path"),
        all_positions=_flag("all_positions", all_positions),
        transparent=_flag("transparent", transparent),
    )


def prove_batch(
    model_path: _Path,
    key_path: _Path,
    proof_paths: Sequence[_Path],
    inputs: Sequence[Union[Sequence[int], str]],
    *,
    secret_path: Optional[_Path] = None,
    family: Optional[str] = None,
    heads: Optional[int] = None,
    mask: Optional[str] = None,
    all_positions: bool = False,
    jobs: Optional[int] = None,
    threads: Optional[int] = None,
    transparent: bool = False,
) -> list:
    """Prove many inputs on one model, loaded and checked against its chain key once.

    ``key_path`` is a chain key (``commit_model(..., layers=(a, b))``); ``inputs`` are token id
    lists or strings (text), all of one kind; input i's proof is written to ``proof_paths[i]``.
    ``jobs`` inputs are proven at once (default: one per core, as many as the memory holds),
    each on ``threads / jobs`` threads. Returns each input's proven output, as ``prove(...,
    layers=...)`` does (the logits of a chain with a head). The first failure is raised after
    every input was tried.
    """
    inputs = list(inputs)
    paths = [_fspath(p, "proof_paths[{}]".format(i)) for i, p in enumerate(proof_paths)]
    texts = [i for i in inputs if isinstance(i, str)]
    if texts and len(texts) != len(inputs):
        raise UsageError("inputs must be all token id lists or all texts")
    prover = _native.ChainProver(
        _fspath(model_path, "model_path"),
        _fspath(key_path, "key_path"),
        secret_path=_fspath(secret_path, "secret_path"),
        family=_text("family", family),
        heads=_whole("heads", heads, 1),
        mask=_text("mask", mask),
        transparent=_flag("transparent", transparent),
    )
    return prover.prove_batch(
        paths,
        tokens=None if texts else [_tokens(i) for i in inputs],
        texts=texts or None,
        all_positions=_flag("all_positions", all_positions),
        jobs=_whole("jobs", jobs, 1),
        threads=_whole("threads", threads, 1),
    )


class Verified:
    """What a verify call accepted: the statement the proof is about and its proven output.

    An array alone proves nothing (a proof of other tokens verifies too): read the statement,
    or pass what you expect to ``verify`` (``tokens=``, ``text=``, ``positions=``, ``layers=``),
    which refuses any other with ``RefusedProof``.

    Attributes: ``kind`` (``"model layer"``, ``"chain"``, ``"attention layer"``), ``mode``
    (``"zero-knowledge"`` or ``"plain"``), ``key_fingerprint`` and ``description`` (the key's;
    the description is the model owner's unauthenticated words; ``None`` for an attention
    layer), ``layers`` (``(first, end)`` for a chain, else ``None``), ``tokens`` (how many),
    ``input`` (``"token ids"`` when the first input is proven from them, ``"committed hidden
    state"`` when it is a state the prover committed to — not proven to come from any tokens —,
    ``"committed Q, K, V"``), ``input_commitment``, ``token_ids`` (uint64 array or ``None``),
    ``positions`` (the logits' positions, uint64 array, or ``None``), ``predicted`` (each
    position's argmax token, or ``None``), ``output_name`` (``"logits"``, ``"H'"``, ``"Z"``,
    ``"O"``), ``output`` (the numpy array), ``output_digest`` (BLAKE3, as ``zkmha verify``
    prints it) and ``verify_seconds``. ``numpy.asarray(verified)`` is the output.
    """

    __slots__ = (
        "kind",
        "mode",
        "key_fingerprint",
        "description",
        "layers",
        "tokens",
        "input",
        "input_commitment",
        "token_ids",
        "positions",
        "predicted",
        "output_name",
        "output",
        "output_digest",
        "verify_seconds",
    )

    def __init__(self, fields: Dict[str, Any]):
        for name in self.__slots__:
            value = fields[name]
            # What was verified is not changed through the result: its arrays are read-only.
            if isinstance(value, _np.ndarray):
                value.flags.writeable = False
            setattr(self, name, value)

    def __array__(self, dtype: Any = None, copy: Optional[bool] = None) -> _np.ndarray:
        converts = dtype is not None and _np.dtype(dtype) != self.output.dtype
        if copy is False and converts:
            raise ValueError(f"the output is {self.output.dtype}: {dtype} needs a copy")
        output = self.output.astype(dtype) if converts else self.output
        return output.copy() if copy or converts else output

    @property
    def shape(self) -> Tuple[int, ...]:
        """The output's shape."""
        return self.output.shape

    @property
    def dtype(self) -> _np.dtype:
        """The output's dtype."""
        return self.output.dtype

    def __repr__(self) -> str:
        rows, columns = self.output.shape
        parts = [f"kind={self.kind!r}", f"mode={self.mode!r}"]
        if self.layers is not None:
            parts.append(f"layers={tuple(self.layers)!r}")
        if self.token_ids is not None:
            parts.append(f"token_ids={self.token_ids.tolist()!r}")
        else:
            parts.append(f"input={self.input!r}")
        if self.positions is not None:
            parts.append(f"positions={self.positions.tolist()!r}")
        parts.append(f"output={self.output_name} {rows}x{columns}")
        parts.append(f"output_digest={self.output_digest!r}")
        if self.key_fingerprint is not None:
            parts.append(f"key_fingerprint={self.key_fingerprint!r}")
        return f"Verified({', '.join(parts)})"


def verify(
    key_path: _Path,
    proof_path: _Path,
    *,
    tokens: Optional[Sequence[int]] = None,
    text: Optional[str] = None,
    model_path: Optional[_Path] = None,
    positions: Optional[Sequence[int]] = None,
    layers: Optional[Tuple[int, int]] = None,
) -> Verified:
    """Verify a model-layer proof with its verifier key alone (a chain's proof with its chain
    key: the links and every layer); returns what it accepted, a ``Verified``.

    Say what you expect, and a proof of anything else raises ``RefusedProof`` (before any
    verification work): ``tokens`` (the ids the proof must be proven from: only a chain from
    layer 0 whose key holds the embedding table proves its tokens, so any other proof is
    refused), or ``text`` with ``model_path`` (the model file whose tokenizer reads it),
    ``positions`` (the logits' positions: pass them when you want logits, since a chain of the
    same tokens that ends in its last hidden state is accepted with tokens alone), ``layers``
    (``(first, end)`` of a chain). A proof that does not verify raises ``InvalidProof``; a
    ``RefusedProof`` says nothing about validity (the proof was not verified). The result's
    arrays are read-only.
    """
    if text is not None and model_path is None:
        raise UsageError("text= needs model_path=: the model file whose tokenizer reads the text")
    if text is not None and tokens is not None:
        raise UsageError("pass tokens= or text=, not both")
    if model_path is not None and text is None:
        raise UsageError("model_path= is the tokenizer of text=: pass text= with it, or drop it")
    return Verified(
        _native.verify(
            _fspath(key_path, "key_path"),
            _fspath(proof_path, "proof_path"),
            tokens=_tokens(tokens),
            text=_text("text", text),
            model=_fspath(model_path, "model_path"),
            positions=_tokens(positions, "position"),
            layers=_layers(layers),
        )
    )


def inspect(path: _Path) -> Dict[str, Any]:
    """What a file zkmha writes holds (a proof of either kind, a verifier key or a model
    secret), as ``zkmha inspect --json`` prints it: kind, shapes, sizes and the fingerprints
    of its commitments. Nothing is verified."""
    return _json.loads(_native.inspect(_fspath(path, "path")))


def estimate_attention(
    tokens: int,
    heads: int,
    head_dim: int,
    value_head_dim: Optional[int] = None,
    *,
    zero_knowledge: bool = True,
) -> Dict[str, float]:
    """What proving an attention layer of this shape should cost, before any work.

    Returns ``{"seconds": …, "memory_bytes": …}``: the prover's time at the rates measured on a
    2-core machine (fewer seconds with more cores) and its peak memory, both from the shape
    alone (the estimate ``prove_attention`` checks against ``max_memory``).
    """
    values = [_whole(name, v, 1) for name, v in (("tokens", tokens), ("heads", heads), ("head_dim", head_dim))]
    value_head_dim = values[2] if value_head_dim is None else _whole("value_head_dim", value_head_dim, 1)
    memory, seconds = _native.estimate_attention(*values, value_head_dim, bool(zero_knowledge))
    return {"seconds": seconds, "memory_bytes": memory}


def prove_attention(
    queries: Any,
    keys: Any,
    values: Any,
    heads: int,
    proof_path: _Path,
    *,
    mask: str = "none",
    zero_knowledge: bool = True,
    softmax: str = "exp",
    score_scale: Optional[float] = None,
    max_memory: Optional[int] = None,
) -> _np.ndarray:
    """Prove one attention layer on integer inputs and write the proof to ``proof_path``.

    ``queries`` and ``keys`` are ``tokens × heads·head_dim``, ``values`` ``tokens ×
    heads·value_head_dim`` integer arrays (entries below 2^31 in magnitude: quantize floats
    first). The proof commits to them (hiding, and every step masked, unless
    ``zero_knowledge=False``) and proves ``O = concat_h(softmax(mask(Q_h K_hᵀ)) V_h)`` with the
    fixed-point softmax (``softmax="exp"``, at ``score_scale`` real exponent units per unit of
    score; by default the scale that gives scores of inputs uniform in −127..127 a standard
    deviation of 4) or linear attention (``softmax="linear"``, softmax not proven). ``mask`` is
    ``"none"``, ``"causal"`` or ``"sliding:W"`` (causal, keeping the ``W`` most recent tokens). A layer whose estimated memory exceeds the machine's (or
    ``max_memory`` bytes) raises ``OutOfResources`` before proving. Returns the proven output
    O (int64, ``tokens × heads·value_head_dim``).
    """
    heads = _operator.index(heads)
    if heads <= 0:
        raise UsageError(f"heads must be a positive whole number, not {heads}")
    arrays = []
    for name, array in (("queries", queries), ("keys", keys), ("values", values)):
        array = _np.asarray(array)
        if array.ndim != 2:
            raise UsageError(f"{name} must be a 2-D array (tokens × heads·width), not {array.ndim}-D")
        if not _np.issubdtype(array.dtype, _np.integer):
            raise BadInput(f"{name} holds {array.dtype} values; the attention layer proves integers: quantize first")
        # Unsigned values past int64 would wrap in the cast: refuse them instead.
        if array.size and array.dtype.kind == "u" and array.max() > _np.iinfo(_np.int64).max:
            raise BadInput(f"{name} holds {array.max()}, beyond the 64-bit integers the layer reads")
        arrays.append(_np.ascontiguousarray(array, dtype=_np.int64))
    return _native.prove_attention(
        *arrays,
        heads,
        _fspath(proof_path, "proof_path"),
        mask=_text("mask", mask),
        zero_knowledge=zero_knowledge,
        softmax=softmax,
        score_scale=score_scale,
        max_memory=_whole("max_memory", max_memory, 1),
    )


def verify_attention(
    proof_path: _Path,
    *,
    softmax: Optional[str] = None,
    mask: Optional[str] = None,
    heads: Optional[int] = None,
    head_dim: Optional[int] = None,
) -> Verified:
    """Verify an attention-layer proof with nothing but itself; returns what it accepted, a
    ``Verified`` whose output is the proven O (int64; ``numpy.asarray(verified)``).

    The proof's statement must be the one expected, else ``RefusedProof`` (checked before
    verifying): its softmax ``softmax`` as ``zkmha verify`` prints it (``"linear"`` or
    ``"multiplier=…,shift=…,exponent_bits=…,output_bits=…,tolerance_bits=…"``), by default the
    one ``prove_attention`` uses for the shape; and where given, its ``mask``, ``heads`` and
    ``head_dim`` (a proof with other heads can give O of the same shape). A proof that does
    not verify raises ``InvalidProof``. The proof shows that *some* committed Q, K, V give O:
    compare the commitments' fingerprints (``inspect``) with the ones you expect.
    """
    return Verified(
        _native.verify_attention(
            _fspath(proof_path, "proof_path"),
            softmax=softmax,
            mask=_text("mask", mask),
            heads=None if heads is None else _operator.index(heads),
            head_dim=None if head_dim is None else _operator.index(head_dim),
        )
    )


def hidden_state(
    model_path: _Path,
    *,
    tokens: Optional[Sequence[int]] = None,
    text: Optional[str] = None,
    layer: int = 0,
    family: Optional[str] = None,
    heads: Optional[int] = None,
) -> _np.ndarray:
    """The hidden state entering ``layer`` for ``tokens`` (or ``text``), float64,
    ``tokens × d_model``: the embeddings through the layers before it, computed in float64
    and **not proven** — a deeper layer's ``input`` for ``prove`` (which then proves that layer
    alone; ``prove(..., layers=(a, b))`` proves consecutive layers as one chain)."""
    return _native.hidden_state(
        _fspath(model_path, "model_path"),
        tokens=_tokens(tokens),
        text=_text("text", text),
        layer=_whole("layer", layer),
        family=_text("family", family),
        heads=_whole("heads", heads, 1),
    )


def write_example_model(directory: _Path, seed: int = 1) -> str:
    """Write a tiny synthetic BERT-style model (d_model 16, 4 heads, a vocabulary of 40) to
    ``directory/model.safetensors`` with its config.json; returns the model's path."""
    return _native.write_example_model(_fspath(directory, "directory"), seed)


def write_example_llama(directory: _Path, seed: int = 7, layers: int = 2) -> str:
    """Write a tiny synthetic Llama-style model with ``layers`` whole layers (d_model 16, 4 query
    heads sharing 2 key/value heads, a gated SiLU MLP, a vocabulary of 40) to
    ``directory/model.safetensors`` with its config.json; returns the model's path."""
    return _native.write_example_llama(_fspath(directory, "directory"), seed, layers)


def _whole(name: str, value: Any, minimum: int = 0) -> Any:
    """``value`` as a whole number from ``minimum`` below 2^63 (``None`` kept), else
    ``UsageError`` (a value that is not an integer too: every argument error is a zkmha
    error, never a bare ``TypeError`` or ``OverflowError``)."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise UsageError(f"{name} must be a whole number, not {value!r}")
    try:
        value = _operator.index(value)
    except TypeError:
        raise UsageError(f"{name} must be a whole number, not {value!r}") from None
    if not minimum <= value < 2**63:
        raise UsageError(f"{name} must be a whole number from {minimum} up, not {value}")
    return value


def _flag(name: str, value: Any) -> bool:
    """``value`` as a flag: ``True`` or ``False`` (numpy's too), else ``UsageError``."""
    if isinstance(value, (bool, _np.bool_)):
        return bool(value)
    raise UsageError(f"{name} must be True or False, not {value!r}")


def _text(name: str, value: Any) -> Optional[str]:
    """``value`` as text (``None`` kept), else ``UsageError``."""
    if value is None or isinstance(value, str):
        return value
    raise UsageError(f"{name} must be a string, not {value!r}")


def _tokens(tokens: Optional[Sequence[int]], what: str = "token id") -> Optional[list]:
    if tokens is None:
        return None
    if isinstance(tokens, (str, bytes)):
        raise UsageError(f"pass the {what}s as a sequence of whole numbers, not {tokens!r}")
    try:
        ids = [_operator.index(t) for t in tokens]
    except TypeError as error:
        raise UsageError(f"the {what}s must be whole numbers: {error}") from None
    bad = [t for t in ids if not 0 <= t < 2**63]
    if bad:
        raise BadInput(f"{what} {bad[0]} is not a {what} (they are whole numbers from 0)")
    return ids


def _layers(layers: Optional[Tuple[int, int]]) -> Optional[Tuple[int, int]]:
    if layers is None:
        return None
    try:
        first, end = layers
    except (TypeError, ValueError):
        first = end = None
    if isinstance(layers, (str, bytes)) or first is None:
        raise UsageError(f"layers must be a pair (first, end), e.g. (0, 3) for layers 0 to 2, not {layers!r}")
    return (_whole("the first layer", first), _whole("the end layer", end))


def _fspath(path: Optional[_Path], name: str = "a path") -> Optional[str]:
    if path is None:
        return None
    try:
        return _os.fspath(path)
    except TypeError:
        raise UsageError(f"{name} must be a path (str or os.PathLike), not {path!r}") from None
