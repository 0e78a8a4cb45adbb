"""export.saved_model_writer: the SavedModel of each Keras, and their match.

These tests run under tf-keras and under Keras 3 (CI's Keras 3 job).
Under Keras 3 an export is written with ``keras.export.ExportArchive``;
the last test builds the same models under both Kerases (each in a
process of its own, ``tests/export/cross_keras.py``), carries the weights
from the tf-keras model to the Keras 3 one by path, exports both and
loads both in a process of plain TensorFlow: the same signatures, the
same lists, the same scores.
"""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from tests.export import cross_keras
from tests.export.conftest import random_requests
from tests.keras_env import KERAS3
from tfrec_tricks.export import export_for_serving
from tfrec_tricks.export.saved_model_writer import write_export_archive
from tfrec_tricks.models import ModelConfig, SequentialRetrievalModel

ITEMS = ["[PAD]", "a", "b", "c", "d", "e"]
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(__file__)))


def _tiny_export(tmp_path) -> str:
    model = SequentialRetrievalModel(ModelConfig(num_items=6, max_len=4))
    return export_for_serving(
        model, str(tmp_path / "m"), ITEMS, k=3, warmup=False
    )


@pytest.mark.slow
def test_an_export_holds_the_signatures_and_catalogue_of_either_keras(
    tmp_path,
):
    loaded = tf.saved_model.load(_tiny_export(tmp_path))
    assert sorted(loaded.signatures) == [
        "recommend_filtered",
        "score_candidates",
        "serving_default",
    ]
    catalogue = loaded.raw_item_ids
    if KERAS3:
        # ExportArchive saves variable collections: a list of one.
        (catalogue,) = catalogue
    assert [raw.decode() for raw in catalogue.numpy()] == ITEMS
    answer = loaded.signatures["serving_default"](
        history=tf.constant([["a", "zzz", "b"]])
    )
    assert answer["item_ids"].shape == (1, 3)
    assert answer["scores"].dtype == tf.float32


@pytest.mark.skipif(KERAS3, reason="tf-keras refuses ExportArchive")
def test_export_archive_is_refused_under_tf_keras(tmp_path):
    with pytest.raises(ValueError, match="needs Keras 3"):
        write_export_archive(object(), str(tmp_path / "x"))


def _requests(work: str) -> None:
    """Each configuration's inputs of every signature, in one file."""
    arrays = {}
    items = cross_keras.ITEMS
    for index, name in enumerate(cross_keras.CONFIGS):
        options, _ = cross_keras.CONFIGS[name]
        floats = options.get("features", ())
        history, values = random_requests(items, 8, 9, floats, seed=index)
        arrays[f"{name}/history"] = history
        for feature, value in values.items():
            arrays[f"{name}/{feature}"] = value
        for token in options.get("token_features", ()):
            choices = np.asarray(["", "web", "app", "unknown"])
            picks = np.random.default_rng(index).integers(0, 4, history.shape)
            arrays[f"{name}/{token['name']}"] = choices[picks]
        rng = np.random.default_rng(100 + index)
        arrays[f"{name}/exclude_item_ids"] = np.asarray(items)[
            rng.integers(0, len(items), (8, 3))
        ]
        arrays[f"{name}/k"] = rng.integers(1, cross_keras.K + 1, 8).astype(
            np.int32
        )
        arrays[f"{name}/history_last"] = rng.random(8) < 0.5
        arrays[f"{name}/candidate_ids"] = np.asarray(items + ["nope"])[
            rng.integers(0, len(items) + 1, (8, 6))
        ]
    np.savez(os.path.join(work, "requests.npz"), **arrays)


def _run(args: list, keras: str | None) -> None:
    environment = {
        k: v
        for k, v in os.environ.items()
        if k not in ("TF_USE_LEGACY_KERAS", "PYTHONPATH")
    }
    if keras is not None:
        # The package from this checkout; the plain process gets neither.
        environment.update(TF_USE_LEGACY_KERAS=keras, PYTHONPATH=ROOT)
    result = subprocess.run(
        [sys.executable, *args],
        capture_output=True,
        text=True,
        cwd=ROOT if keras is not None else None,
        env=environment,
    )
    assert result.returncode == 0, result.stderr[-4000:]


@pytest.mark.slow
@pytest.mark.skipif(
    not KERAS3,
    reason="Keras 3 job only: it starts both Kerases in processes of their "
    "own, so the tf-keras job would only repeat it",
)
def test_both_kerases_export_the_same_answers(tmp_path):
    work = str(tmp_path)
    _requests(work)
    _run(["-m", "tests.export.cross_keras", "source", work], keras="1")
    _run(["-m", "tests.export.cross_keras", "copy", work], keras="0")
    names = ",".join(cross_keras.CONFIGS)
    _run(["-c", cross_keras.PLAIN_TF_SCRIPT, work, names], keras=None)
    with open(os.path.join(work, "signatures.json")) as handle:
        signatures = json.load(handle)
    answers = dict(np.load(os.path.join(work, "answers.npz")))
    for name in cross_keras.CONFIGS:
        # Names, dtypes and shapes of every input and output.
        assert signatures[f"keras-3/{name}"] == signatures[f"tf-keras/{name}"]
        assert sorted(signatures[f"keras-3/{name}"]) == [
            "recommend_filtered",
            "score_candidates",
            "serving_default",
        ]
        for key in sorted(answers):
            if not key.startswith(f"tf-keras/{name}/"):
                continue
            ours = answers["keras-3" + key.removeprefix("tf-keras")]
            if key.endswith("/item_ids"):
                np.testing.assert_array_equal(ours, answers[key], key)
            else:
                np.testing.assert_allclose(
                    ours, answers[key], rtol=0, atol=1e-5, err_msg=key
                )
