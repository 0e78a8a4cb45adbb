"""training.persistence: what a run writes, and reading it back."""

import dataclasses

import numpy as np
import pytest
import tensorflow as tf

from tests.run_helpers import tiny_config
from tfrec_tricks.training.persistence import load_model
from tfrec_tricks.training.run_training import train

pytestmark = pytest.mark.slow


def test_run_directory_model_reloads_with_equal_outputs(tmp_path):
    from tfrec_tricks.data import load_source, prepare

    config = tiny_config(
        tmp_path,
        epochs=1,
        model={
            "embedding_dim": 8,
            "head": "cpr",
            "cpr_reranker_ks": [5],
            "features": ["time_gap"],
            "sse_item_probability": 0.1,
        },
    )
    result = train(config, verbose=0)
    model = load_model(result.run_dir)
    data = prepare(
        load_source(
            "synthetic", synthetic_options={"num_users": 60, "num_items": 40}
        ).interactions,
        max_len=10,
    )
    batch = {k: v[:16] for k, v in data.test.as_dict().items()}
    reloaded = model(batch).numpy()
    assert reloaded.shape == (16, data.num_items)
    np.testing.assert_allclose(
        reloaded, result.model(batch).numpy(), rtol=1e-6, atol=1e-6
    )
    evaluated = model.evaluate(
        tf.data.Dataset.from_tensors(batch), return_dict=True, verbose=0
    )
    assert 0.0 <= evaluated["ndcg@10"] <= 1.0


def test_load_model_from_an_unfinished_run_says_so(tmp_path):

    with pytest.raises(FileNotFoundError, match="No trained model"):
        load_model(str(tmp_path))


def test_run_writes_tensorboard_scalars_and_hparams(tmp_path):
    from tensorboard.backend.event_processing import event_accumulator

    model = {"embedding_dim": 8, "head": "cpr", "cpr_reranker_ks": [5]}
    config = dataclasses.replace(tiny_config(tmp_path, epochs=2), model=model)
    train(config, verbose=0)
    logs = tmp_path / "run" / "tensorboard"
    scalars = event_accumulator.EventAccumulator(
        str(logs / "validation"), size_guidance={"tensors": 0}
    )
    scalars.Reload()
    tags = scalars.Tags()["tensors"]
    assert "epoch_ndcg@10" in tags and "epoch_loss" in tags
    assert len(scalars.Tensors("epoch_ndcg@10")) == 2  # one per epoch
    hparams = event_accumulator.EventAccumulator(str(logs))
    hparams.Reload()
    plugin = hparams.PluginTagToContent("hparams")
    session = next(iter(plugin.values()))
    from tensorboard.plugins.hparams import plugin_data_pb2

    data = plugin_data_pb2.HParamsPluginData.FromString(session)
    values = data.session_start_info.hparams
    assert values["model.head"].string_value == "cpr"
    assert values["model.cpr_reranker_ks"].string_value == "5"
    assert values["train.seed"].number_value == 0
