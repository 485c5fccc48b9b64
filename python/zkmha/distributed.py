"""Whole-model proofs spread over a Ray cluster: one Ray task per layer.

A coordinator (this process) loads the model once, runs each input's quantized forward pass
and commits the hidden states between the layers; every layer is then proven by its own Ray
task, on any worker, from the two committed boundaries it joins; the coordinator proves the
embedding and the head meanwhile, gathers the layer proofs in order, verifies the chained
proof against the key and writes it: the file ``zkmha verify`` (or ``zkmha.verify``) checks.

::

    import ray, zkmha.distributed as zd
    ray.init()                                   # a local cluster; ray.init(address="ray://host:10001") for a real one
    logits = zd.prove("model.safetensors", "model.vk", "model.proof", tokens=[464, 2068, 7586])

Each layer's package (its key, its weights' blinds, its integer weights) is put into Ray's
object store once per ``RayProver`` and shared by every task of that layer, for every input.
A task whose worker dies is retried (``max_retries``); the layers already proven are results
in the object store, kept and not proven again. A task that fails on its input (not a lost
worker) is not retried: its error is raised.

The packages and jobs hold the weights' and the boundaries' blinds — the prover's secrets, as
the model secret is: run the tasks on a cluster you trust with them. The assembled proof is
verified like any other; a layer proof from another input's boundaries is rejected.

Every worker needs the ``zkmha`` package (``pip install ./python`` on each node) and no model
file: the weights travel through the object store.
"""

import os as _os
import time as _time
from typing import Any, List, Optional, Sequence

import numpy as _np

from . import _native
from ._native import UsageError

__all__ = ["RayProver", "prove", "prove_batch"]


def _prove_layer(package: bytes, job: bytes, threads: int, log_dir: Optional[str], label: str) -> bytes:
    """One layer's proof, in a Ray worker (a plain function: Ray ships it by reference)."""
    pid = _os.getpid()
    if log_dir is not None:
        _mark(log_dir, f"start {label} pid {pid}")
    link = _native.prove_layer_task(package, job, threads=threads)
    if log_dir is not None:
        _mark(log_dir, f"done {label} pid {pid}")
    return link


def _mark(log_dir: str, line: str) -> None:
    """Appends one line to the run's log (``tasks.log``: a task's start and end, with its
    worker's process id), in one write."""
    with open(_os.path.join(log_dir, "tasks.log"), "a") as log:
        log.write(f"{_time.time():.3f} {line}\n")


def _ray():
    try:
        import ray
    except ImportError:  # pragma: no cover - depends on the environment
        raise UsageError("zkmha.distributed needs Ray: pip install 'ray>=2.9'") from None
    if not ray.is_initialized():
        raise UsageError(
            "Ray is not started: call ray.init() (a local cluster) or ray.init(address=...) first, "
            "or use zkmha.distributed.prove(..., address=...)"
        )
    return ray


class RayProver:
    """A chain's prover for a Ray cluster: the model loaded here once, every layer's package in
    the object store once, then any number of inputs proven with one task per layer.

    ``model_path`` and ``key_path`` (a chain key from ``zkmha.commit_model(..., layers=...)``
    or ``zkmha commit-model --layers``; the secret beside it, or ``secret_path``) as
    ``zkmha.prove``. ``threads_per_task`` threads (and Ray CPUs) for each layer's proof;
    ``max_retries`` retries of a task whose worker died; ``log_dir`` a directory where every
    task's start and end are appended to ``tasks.log`` with its worker's process id.
    """

    def __init__(
        self,
        model_path,
        key_path,
        *,
        secret_path=None,
        family: Optional[str] = None,
        heads: Optional[int] = None,
        mask: Optional[str] = None,
        transparent: bool = False,
        threads_per_task: int = 1,
        max_retries: int = 3,
        log_dir=None,
    ) -> None:
        ray = _ray()
        if int(threads_per_task) < 1 or int(max_retries) < 0:
            raise UsageError("threads_per_task must be at least 1 and max_retries at least 0")
        self._prover = _native.ChainProver(
            _os.fspath(model_path),
            _os.fspath(key_path),
            secret_path=None if secret_path is None else _os.fspath(secret_path),
            family=family,
            heads=heads,
            mask=mask,
            transparent=bool(transparent),
        )
        self._threads = int(threads_per_task)
        self._log_dir = None if log_dir is None else _os.fspath(log_dir)
        self._packages = [ray.put(self._prover.package(layer)) for layer in range(self._prover.layers)]
        self._task = ray.remote(num_cpus=self._threads, max_retries=int(max_retries), retry_exceptions=False)(
            _prove_layer
        )

    @property
    def layers(self) -> int:
        """The chain's number of layers (tasks per input)."""
        return self._prover.layers

    @property
    def zero_knowledge(self) -> bool:
        """Whether the proofs are zero-knowledge (a hiding key)."""
        return self._prover.zero_knowledge

    def plan(self, *, tokens=None, text=None, input=None, all_positions: bool = False):
        """One input's plan (its forward pass, its committed boundaries): ``jobs()`` gives each
        layer's job, ``assemble`` the proof. ``prove`` runs the whole of it."""
        if input is not None:
            input = _np.ascontiguousarray(input, dtype=_np.float64)
        ids = None if tokens is None else [int(t) for t in tokens]
        return self._prover.plan(tokens=ids, text=text, input=input, all_positions=all_positions)

    def submit(self, plan, label: str = "") -> List[Any]:
        """Submits one Ray task per layer of ``plan``; returns their object references, in order."""
        first = self._prover.first_layer
        return [
            self._task.remote(self._packages[layer], job, self._threads, self._log_dir, f"{label}layer {first + layer}")
            for layer, job in enumerate(plan.jobs())
        ]

    def prove(self, proof_path, *, tokens=None, text=None, input=None, all_positions: bool = False) -> _np.ndarray:
        """Proves one input on the cluster and writes the chain's proof to ``proof_path``;
        returns the proven output (the logits of a chain with a head, else the last layer's
        output), as ``zkmha.prove`` does."""
        return self.prove_batch([proof_path], [dict(tokens=tokens, text=text, input=input)], all_positions=all_positions)[0]

    def prove_batch(self, proof_paths: Sequence, inputs: Sequence, *, all_positions: bool = False) -> List[_np.ndarray]:
        """Proves every input on the cluster at once (every input's layer tasks submitted
        together) and writes input i's proof to ``proof_paths[i]``; returns the outputs in
        order. An input is a list of token ids, a string (text) or a dict of ``tokens``,
        ``text`` or ``input``. The first input that fails raises (the proofs of the inputs
        before it are written; the later inputs' tasks are cancelled)."""
        ray = _ray()
        if len(proof_paths) != len(inputs):
            raise UsageError(f"{len(inputs)} inputs but {len(proof_paths)} proof paths: one proof file per input")
        plans, refs = [], []
        for i, given in enumerate(inputs):
            plan = self.plan(all_positions=all_positions, **_as_input(given))
            plans.append(plan)
            refs.append(self.submit(plan, label=f"input {i} " if len(inputs) > 1 else ""))
        # The coordinator's own part while the workers prove the layers.
        for plan in plans:
            plan.prove_ends(self._prover)
        outputs = []
        for at, (plan, plan_refs, path) in enumerate(zip(plans, refs, proof_paths)):
            try:
                links = ray.get(plan_refs)
            except BaseException:
                # The inputs after this one are not gathered: their tasks are cancelled.
                for later in refs[at + 1 :]:
                    for ref in later:
                        ray.cancel(ref)
                raise
            outputs.append(plan.assemble(self._prover, links, _os.fspath(path)))
        return outputs


def _as_input(given) -> dict:
    if isinstance(given, dict):
        return {k: v for k, v in given.items() if v is not None}
    if isinstance(given, str):
        return {"text": given}
    return {"tokens": list(given)}


def _connected(address: Optional[str], num_cpus: Optional[int]):
    """Ray, started here when it is not: a local cluster (loopback only) or the cluster at
    ``address``."""
    try:
        import ray
    except ImportError:
        raise UsageError("zkmha.distributed needs Ray: pip install 'ray>=2.9'") from None
    if not ray.is_initialized():
        if address is None:
            ray.init(num_cpus=num_cpus, include_dashboard=False, _node_ip_address="127.0.0.1")
        else:
            ray.init(address=address)
    return ray


def prove(
    model_path,
    key_path,
    proof_path,
    *,
    tokens=None,
    text=None,
    input=None,
    all_positions: bool = False,
    address: Optional[str] = None,
    num_cpus: Optional[int] = None,
    **options,
) -> _np.ndarray:
    """Proves a chain (a whole model, from a chain key) on a Ray cluster and writes the proof:
    ``zkmha.prove(..., layers=...)`` with one Ray task per layer. Starts a local cluster
    (``num_cpus`` CPUs, loopback only) unless Ray is running or ``address`` names a cluster.
    ``options``: as ``RayProver``."""
    _connected(address, num_cpus)
    prover = RayProver(model_path, key_path, **options)
    return prover.prove(proof_path, tokens=tokens, text=text, input=input, all_positions=all_positions)


def prove_batch(
    model_path,
    key_path,
    proof_paths: Sequence,
    inputs: Sequence,
    *,
    all_positions: bool = False,
    address: Optional[str] = None,
    num_cpus: Optional[int] = None,
    **options,
) -> List[_np.ndarray]:
    """Proves many inputs on one loaded model over a Ray cluster (``RayProver.prove_batch``)."""
    _connected(address, num_cpus)
    prover = RayProver(model_path, key_path, **options)
    return prover.prove_batch(proof_paths, inputs, all_positions=all_positions)
