"""A whole model proven over a local Ray cluster (`zkmha.distributed`), and many inputs on one
loaded model (`zkmha.prove_batch`).

The cluster is started by this module on loopback with 2 CPUs (two worker processes) and
stopped at its end; every test is bounded in time (the process is stopped with a traceback past
its bound). The model is the tiny four-layer Llama-style model, proven from tokens to logits in
zero knowledge (the default).
"""

import faulthandler
import os
import re
import signal
import threading
import time

import numpy as np
import pytest

import zkmha

ray = pytest.importorskip("ray")
import zkmha.distributed as zd  # noqa: E402

LAYERS = 4
INPUT = [3, 1, 4, 1, 5]
OTHER = [2, 7, 1, 8]


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    directory = tmp_path_factory.mktemp("distributed")
    path = zkmha.write_example_llama(directory, layers=LAYERS)
    key = str(directory / "chain.vk")
    zkmha.commit_model(path, key, layers=(0, LAYERS))
    ray.init(num_cpus=2, include_dashboard=False, _node_ip_address="127.0.0.1", log_to_driver=False)
    try:
        yield path, key, directory
    finally:
        faulthandler.dump_traceback_later(120, exit=True)
        ray.shutdown()
        faulthandler.cancel_dump_traceback_later()


@pytest.fixture(autouse=True)
def bounded():
    """Each test within 180 s, or the run stops with every thread's traceback."""
    faulthandler.dump_traceback_later(180, exit=True)
    yield
    faulthandler.cancel_dump_traceback_later()


_alone = {}


def alone(model, tokens):
    """The one-process prover's output for ``tokens`` (computed once)."""
    path, key, directory = model
    if tuple(tokens) not in _alone:
        proof = str(directory / f"alone-{len(_alone)}.proof")
        _alone[tuple(tokens)] = zkmha.prove(path, key, proof, tokens=tokens, layers=(0, LAYERS))
    return _alone[tuple(tokens)]


def test_the_chained_proof_from_ray_tasks_verifies(model):
    path, key, directory = model
    proof = str(directory / "ray.proof")
    logits = zd.RayProver(path, key).prove(proof, tokens=INPUT)
    assert logits.shape == (1, 40)
    np.testing.assert_array_equal(zkmha.verify(key, proof), logits)
    np.testing.assert_array_equal(logits, alone(model, INPUT))
    assert zkmha.inspect(proof)["zero_knowledge"]


def test_a_killed_worker_is_retried_and_the_finished_layers_are_not_proven_again(model):
    path, key, directory = model
    log_dir = directory / "kill"
    log_dir.mkdir()
    log = log_dir / "tasks.log"
    prover = zd.RayProver(path, key, log_dir=log_dir, max_retries=2)
    proof = str(directory / "killed.proof")
    result = {}

    def run():
        try:
            result["logits"] = prover.prove(proof, tokens=INPUT)
        except BaseException as error:  # reported by the assertion below
            result["error"] = error

    thread = threading.Thread(target=run)
    thread.start()
    # Wait until a layer is done and another one is running, then kill the running one's worker.
    killed = None
    deadline = time.time() + 120
    while killed is None and time.time() < deadline:
        lines = log.read_text().splitlines() if log.exists() else []
        done = {m.group(1) for m in (re.search(r"done layer (\d+)", l) for l in lines) if m}
        running = [
            (m.group(1), int(m.group(2)))
            for m in (re.search(r"start layer (\d+) pid (\d+)", l) for l in lines)
            if m and m.group(1) not in done
        ]
        if done and running:
            killed = running[0]
            os.kill(killed[1], signal.SIGKILL)
        time.sleep(0.02)
    thread.join(150)
    assert killed is not None, "no layer was running after another finished"
    assert not thread.is_alive(), "the run did not finish within 150 s of the kill"
    assert "error" not in result, result.get("error")
    np.testing.assert_array_equal(zkmha.verify(key, proof), result["logits"])
    np.testing.assert_array_equal(result["logits"], alone(model, INPUT))
    starts = {}
    for line in log.read_text().splitlines():
        m = re.search(r"start layer (\d+) pid (\d+)", line)
        if m:
            starts.setdefault(m.group(1), []).append(int(m.group(2)))
    # The killed layer ran twice (the second time on another worker); every other layer once.
    assert len(starts[killed[0]]) == 2 and starts[killed[0]][1] != killed[1], starts
    assert all(len(pids) == 1 for layer, pids in starts.items() if layer != killed[0]), starts
    assert sorted(starts) == [str(l) for l in range(LAYERS)]


def test_a_layer_proof_from_a_wrong_boundary_is_rejected(model):
    path, key, directory = model
    prover = zd.RayProver(path, key)
    plan = prover.plan(tokens=INPUT)
    other = prover.plan(tokens=OTHER)
    links = ray.get(prover.submit(plan))
    foreign = ray.get(prover.submit(other))
    mixed = list(links)
    mixed[2] = foreign[2]
    with pytest.raises(zkmha.InvalidProof):
        plan.assemble(prover._prover, mixed, str(directory / "mixed.proof"))
    assert not (directory / "mixed.proof").exists()
    # The refused plan is used up; a new plan's own links assemble.
    with pytest.raises(zkmha.UsageError, match="assembled already"):
        plan.assemble(prover._prover, links, str(directory / "again.proof"))
    plan = prover.plan(tokens=INPUT)
    links = ray.get(prover.submit(plan))
    np.testing.assert_array_equal(
        plan.assemble(prover._prover, links, str(directory / "right.proof")), alone(model, INPUT)
    )


def test_the_batch_apis_outputs_equal_the_single_input_ones(model):
    path, key, directory = model
    inputs = [INPUT, OTHER]
    on_ray = zd.RayProver(path, key).prove_batch(
        [directory / "batch-ray-0.proof", directory / "batch-ray-1.proof"], inputs
    )
    local = zkmha.prove_batch(
        path, key, [directory / "batch-0.proof", directory / "batch-1.proof"], inputs, jobs=2
    )
    for i, tokens in enumerate(inputs):
        expected = alone(model, tokens)
        np.testing.assert_array_equal(on_ray[i], expected)
        np.testing.assert_array_equal(local[i], expected)
        np.testing.assert_array_equal(zkmha.verify(key, directory / f"batch-{i}.proof"), expected)
        np.testing.assert_array_equal(zkmha.verify(key, directory / f"batch-ray-{i}.proof"), expected)


def test_bad_batch_arguments_raise_one_clear_error(model):
    path, key, directory = model
    with pytest.raises(zkmha.UsageError, match="one proof file per input"):
        zkmha.prove_batch(path, key, [directory / "x.proof"], [INPUT, OTHER])
    with pytest.raises(zkmha.UsageError, match="all token id lists or all texts"):
        zkmha.prove_batch(path, key, [directory / "x.proof", directory / "y.proof"], [INPUT, "text"])
    with pytest.raises(zkmha.BadInput):
        zkmha.prove_batch(path, key, [directory / "z.proof"], [[4000]])
