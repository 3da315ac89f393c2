"""Checkpoint pushes beside training, on the sandbox: a push made slow on purpose
(``TFYARN_CHECKPOINT_PUSH_DELAY``: each push holds its files at temporary names that long
before the renames) neither slows the steps nor loses the last checkpoint, and a cancel
during such a push leaves the last complete checkpoint, which a fresh model dir restores;
``TFYARN_CHECKPOINT_EPOCHS`` spaces a run's checkpoints.

Keras (the quickstart's model), a chief alone, ``model_dir`` on ``hdfs://``.
"""

from __future__ import annotations

import posixpath
import time
from collections.abc import Iterator

import pytest

from tfyarn_jupyter import SpecError, TaskSpec
from tfyarn_jupyter.container.checkpoints import INDEX, TMP_MARK, Index, ModelDir
from tfyarn_jupyter.container.uploader import PUSH_NICE
from tfyarn_jupyter.hadoop import filesystem
from tfyarn_jupyter.protocol.contract import CHECKPOINT_EPOCHS_VAR, PUSH_DELAY_VAR, SYNC_PUSH_VAR
from tfyarn_jupyter.run.result import read_event_log

from .helpers import unique

pytestmark = pytest.mark.sandbox

CHIEF = {"chief": TaskSpec("1G", 1)}


@pytest.fixture
def model_root(sandbox) -> Iterator[str]:
    """A fresh folder of the user's HDFS home for this test's model dirs, removed after."""
    root = f"{filesystem.home()}/tfyarn-test/{unique('pushes')}"
    yield root
    filesystem.delete(root, recursive=True)


def remote_files(model_dir: str) -> list[str]:
    """Every file under ``model_dir`` on HDFS, relative to it."""
    root = filesystem.strip_scheme(model_dir)
    if not filesystem.exists(root):
        return []
    found, todo = [], [root]
    while todo:
        folder = todo.pop()
        for name in filesystem.listdir(folder):
            path = posixpath.join(folder, name)
            st = filesystem.status(path, strict=False)  # a temporary may be renamed meanwhile
            if st is not None and st["type"] == "DIRECTORY":
                todo.append(path)
            elif st is not None:
                found.append(posixpath.relpath(path, root))
    return found


def remote_index(model_dir: str) -> Index | None:
    path = f"{filesystem.strip_scheme(model_dir)}/{INDEX}"
    if not filesystem.exists(path):
        return None
    return Index.parse(filesystem.read_bytes(path).decode())


def test_a_checkpoint_push_made_slow_on_purpose_neither_slows_the_steps_nor_loses_the_last(
    cancer, launch, model_root
):
    epochs, delay = 6, 5.0
    model_dir = filesystem.qualify(f"{model_root}/slow")

    def experiment_fn():
        return cancer.keras_experiment(model_dir, epochs=epochs, steps_per_epoch=40)

    run = launch(experiment_fn, CHIEF, "tfyarn-test-slow-push", env={PUSH_DELAY_VAR: str(delay)})
    result = run.wait(timeout=600)
    stop = read_event_log(run.app_id)["events"]["tasks"]["chief:0"]["train_stop"]
    waited = float(stop["save_s"])
    # Each push waited for would keep training waiting at least `delay` per epoch's save.
    bound = 0.25 * epochs * delay
    print(
        f"\nsaves kept training waiting {waited:.2f} s over {epochs} saves with pushes held "
        f"{delay:.0f} s each (bound {bound:.1f} s; waiting for each push: >= "
        f"{epochs * delay:.0f} s); training {result.training_time_s_per_task['chief:0']:.1f} s"
    )
    assert waited < bound
    # the pushes and their HDFS client's threads ran at a lower priority than the steps
    print(f"pushes: {stop}")
    assert stop["pushes"] >= 1 and stop["push_nice"] == PUSH_NICE, stop
    assert stop["push_client_threads"] >= 1, stop
    assert stop["push_client_nice_min"] == stop["push_client_nice_max"] == PUSH_NICE, stop
    index = remote_index(model_dir)
    assert index is not None and index.latest.endswith(f"-{epochs * 40}"), index
    assert not [f for f in remote_files(model_dir) if TMP_MARK in f]


def test_a_cancel_during_a_slow_push_leaves_the_last_complete_checkpoint_which_restores(
    cancer, launch, model_root, tmp_path
):
    model_dir = filesystem.qualify(f"{model_root}/cancelled")

    def experiment_fn():
        return cancer.keras_experiment(model_dir, epochs=400, steps_per_epoch=20)

    run = launch(experiment_fn, CHIEF, "tfyarn-test-cancel-push", env={PUSH_DELAY_VAR: "20"})
    deadline = time.monotonic() + 400
    committed = None
    # the first push committed, and the next one holds its files at temporary names
    while True:
        assert time.monotonic() < deadline, (run.status(), remote_files(model_dir))
        assert not run.status().ended, run.status()
        committed = committed or remote_index(model_dir)
        if committed is not None and any(TMP_MARK in f for f in remote_files(model_dir)):
            break
        time.sleep(1)
    run.cancel()
    wait = time.monotonic() + 120
    while run.status().app.state != "KILLED":
        assert time.monotonic() < wait, run.status()
        time.sleep(1)
    index = remote_index(model_dir)
    assert index is not None, remote_files(model_dir)
    files = remote_files(model_dir)
    prefix = posixpath.basename(index.latest)
    print(f"\ncancelled during a push: the index names {index.latest}; files {sorted(files)}")
    assert f"{prefix}.index" in files and any(f.startswith(f"{prefix}.data-") for f in files)
    restored = ModelDir(model_dir, tmp_path / "fresh").pull()
    assert restored is not None and restored.endswith(prefix)
    import tensorflow as tf

    variables = tf.train.load_checkpoint(restored).get_variable_to_shape_map()
    assert any("kernel" in name for name in variables), sorted(variables)[:10]


def test_a_keras_run_checkpoints_every_nth_epoch_and_at_the_end_and_refuses_a_bad_interval(
    cancer, launch, model_root, skein_client
):
    """``TFYARN_CHECKPOINT_EPOCHS=2`` over 5 epochs of 10 steps: checkpoints at steps 20, 40
    and 50 (the end), each push waited for so that the model dir keeps every one; a 0 is
    refused before anything is submitted."""
    model_dir = filesystem.qualify(f"{model_root}/every-2")

    def experiment_fn():
        return cancer.keras_experiment(model_dir, epochs=5, steps_per_epoch=10)

    def live() -> set[str]:
        states = ["SUBMITTED", "ACCEPTED", "RUNNING"]
        return {a.id for a in skein_client.get_applications(states=states)}

    before = live()
    with pytest.raises(SpecError, match="TFYARN_CHECKPOINT_EPOCHS='0': give a whole number"):
        launch(experiment_fn, CHIEF, "tfyarn-test-every-0", env={CHECKPOINT_EPOCHS_VAR: "0"})
    assert live() <= before, "nothing submitted"

    env = {CHECKPOINT_EPOCHS_VAR: "2", SYNC_PUSH_VAR: "1"}
    run = launch(experiment_fn, CHIEF, "tfyarn-test-every-2", env=env)
    assert run.wait(timeout=600).final_status == "SUCCEEDED"
    index = remote_index(model_dir)
    print(f"\ncheckpoint index on HDFS: {index}")
    assert index is not None and index.latest == "ckpt-50", index
    assert index.paths == ["ckpt-20", "ckpt-40", "ckpt-50"], index
    saved = {f.split(".", 1)[0] for f in remote_files(model_dir) if f.startswith("ckpt-")}
    assert saved == {"ckpt-20", "ckpt-40", "ckpt-50"}, saved
