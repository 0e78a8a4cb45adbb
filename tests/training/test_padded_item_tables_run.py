"""A run saved before ragged item tables still loads and scores the same.

``data/padded_item_tables_run`` is the ``model/`` folder (with its
``item_features.json`` and ``vocabulary.json``) of a run trained by the
code of before (``tfrec-tricks train --synthetic-users 40
--synthetic-items 40 --epochs 1 --embedding-dim 8 --item-features
shop.item``: a token_seq of up to 12 tokens, a token, a float, a
float_seq, 5 cold items), and ``reference.npz`` the logits that code
computed of four histories.
"""

import json
import os
import shutil

import numpy as np
import pytest

from tfrec_tricks.data.item_features.item_file import ItemFeatureTable
from tfrec_tricks.export.catalogue_extension import (
    extend_catalogue,
    load_feature_specs,
)
from tfrec_tricks.training.persistence import load_model

RUN = os.path.join(os.path.dirname(__file__), "data", "padded_item_tables_run")


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("run") / "sum"
    shutil.copytree(RUN, run_dir)
    return load_model(str(run_dir))


def test_the_padded_tables_load_and_score_as_before(model):
    encoder = model.item_features
    assert not encoder.ragged
    assert [tuple(w.shape) for w in encoder.item_values] == [
        (46, 12),
        (46, 1),
        (46, 1),
        (46, 2),
    ]
    assert int(np.count_nonzero(encoder.item_values[0].numpy())) > 0
    with np.load(os.path.join(RUN, "reference.npz")) as reference:
        logits = model({"history": reference["history"]}, training=False)
        np.testing.assert_allclose(logits, reference["logits"], atol=1e-5)


def test_new_items_join_a_padded_run(model):
    specs = load_feature_specs(os.path.join(RUN, "item_features.json"))
    items = load_vocabulary()
    assert len(items) == 46
    # "x" holds 13 genres, one more than the run's widest row.
    table = ItemFeatureTable(
        {s.name: s.kind for s in specs},
        {"x": {"genres": ("g1",) * 13}, "y": {"price": 3.0}},
    )
    extended = extend_catalogue(model, items, specs, table)
    encoder = extended.model.item_features
    assert not encoder.ragged
    assert tuple(encoder.item_values[0].shape) == (48, 13)


def load_vocabulary():
    with open(os.path.join(RUN, "vocabulary.json")) as handle:
        return json.load(handle)["items"]
