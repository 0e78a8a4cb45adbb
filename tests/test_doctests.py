"""Runs the ``>>>`` examples of the public modules as doctests."""

import doctest
import importlib
import os

import pytest

LAYER_MODULES = [
    "tfrec_tricks.layers.soft_one_hot_encoding",
    "tfrec_tricks.layers.tied_item_embedding",
    "tfrec_tricks.layers.stochastic_shared_embedding",
    "tfrec_tricks.layers.softmax_cpr",
    "tfrec_tricks.layers.mixture_of_softmax",
    "tfrec_tricks.layers.top_k",
    "tfrec_tricks.layers.common",
    "tfrec_tricks.metrics",
    "tfrec_tricks.history_ranking",
    "tfrec_tricks.sampled_ranking",
    "tfrec_tricks.runs.repeat_headroom",
    "tfrec_tricks.runs.run_directory",
    "tfrec_tricks.runs.optimizers",
    "tfrec_tricks.atomic_files",
    "tfrec_tricks.output_targets",
    "tfrec_tricks.config_fields",
]
# These need tf-keras (TFRS); they are doctested in the tf-keras run only.
PIPELINE_MODULES = [
    "tfrec_tricks.data.synthetic",
    "tfrec_tricks.data.loaders",
    "tfrec_tricks.data.user_sequences",
    "tfrec_tricks.data.statistics",
    "tfrec_tricks.data.encoded_interactions",
    "tfrec_tricks.data.prepared_dataset",
    "tfrec_tricks.data.beam_preparation",
    "tfrec_tricks.data.preparation",
    "tfrec_tricks.data.prefix_merging",
    "tfrec_tricks.data.train_windows",
    "tfrec_tricks.data.pipeline",
    "tfrec_tricks.models.sequential_retrieval_model",
    "tfrec_tricks.models.sasrec_encoder",
    "tfrec_tricks.tuning.sequential_retrieval_hypermodel",
    "tfrec_tricks.export.serving_module",
    "tfrec_tricks.export.export_for_serving",
    "tfrec_tricks.export.warmup",
    "tfrec_tricks.export.models_config",
    "tfrec_tricks.callbacks.resumable_early_stopping",
    "tfrec_tricks.callbacks.epoch_timer",
    "tfrec_tricks.callbacks.stop_on_divergence",
    "tfrec_tricks.runs.memory_budget",
    "tfrec_tricks.models.config",
    "tfrec_tricks.runs.train_config",
    "tfrec_tricks.runs.training",
    "tfrec_tricks.tuning.search_directory",
]

KERAS3 = os.environ.get("TF_USE_LEGACY_KERAS", "1").lower() in (
    "0",
    "false",
    "no",
    "off",
)
MODULES = LAYER_MODULES + ([] if KERAS3 else PIPELINE_MODULES)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(
        module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
    )
    assert result.attempted > 0, f"{name} has no docstring example"
    assert result.failed == 0, f"{result.failed} doctest(s) failed in {name}"
