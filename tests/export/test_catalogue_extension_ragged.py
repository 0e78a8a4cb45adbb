"""export --add-items on ragged item tables: the new items' values go
after the old ones, the old items' scores are kept."""

import numpy as np
import pytest
import tensorflow as tf

from tests.export.test_catalogue_extension import (
    HISTORIES,
    ITEMS,
    SPECS,
    encoded_values,
    feature_dicts,
    logits,
    new_table,
)
from tfrec_tricks.data.item_features import encoding
from tfrec_tricks.data.item_features.ragged_rows import RaggedRows
from tfrec_tricks.errors import DataError
from tfrec_tricks.export.catalogue_extension import extend_catalogue
from tfrec_tricks.models import ModelConfig, SequentialRetrievalModel

ROWS = {name: RaggedRows.from_dense(v) for name, v in encoded_values().items()}


def ragged_model():
    tf.keras.utils.set_random_seed(0)
    features = tuple(
        {**f, "num_values": int(ROWS[f["name"]].values.size)}
        for f in feature_dicts()
    )
    config = ModelConfig(
        num_items=len(ITEMS), max_len=4, embedding_dim=8, item_features=features
    )
    known = np.ones(len(ITEMS), np.float32)
    known[ITEMS.index("g")] = 0.0
    return SequentialRetrievalModel(
        config, item_feature_values={"values": ROWS, "id_known": known}
    )


def test_new_items_values_follow_the_old_ones():
    model = ragged_model()
    assert model.item_features.ragged
    extended = extend_catalogue(model, ITEMS, SPECS, new_table())
    new, n = extended.model, len(ITEMS)
    encoder = new.item_features
    rows = {
        f["name"]: RaggedRows(values.numpy(), splits.numpy())
        for f, values, splits in zip(
            encoder.features, encoder.item_values, encoder.item_row_splits
        )
    }
    # "twin" copies the cold "g"; "odd" has three genres (two unknown:
    # OOV 1), an unknown color and no year.
    genres = rows["genres"]
    np.testing.assert_array_equal(
        genres.values, [*ROWS["genres"].values, 3, 1, 2, 3]
    )
    assert [genres.row(i).tolist() for i in (n, n + 1)] == [[3], [1, 2, 3]]
    assert rows["year"].row(n + 1).size == 0
    assert rows["color"].row(n + 1).tolist() == [1]
    by_name = {f["name"]: f for f in new.config.item_features}
    assert by_name["genres"]["num_values"] == ROWS["genres"].values.size + 4
    assert by_name["genres"]["width"] == 3
    assert by_name["year"]["num_values"] == ROWS["year"].values.size + 1
    before = logits(model, HISTORIES)
    after = logits(new, HISTORIES)
    np.testing.assert_allclose(after[:, :n], before, atol=1e-5)
    g, twin = ITEMS.index("g"), n
    np.testing.assert_allclose(after[:, g], after[:, twin], atol=1e-5)


def test_a_new_item_above_the_cap_is_refused(monkeypatch):
    monkeypatch.setattr(encoding, "MAX_ROW_VALUES", 3)
    rows = {"wide": {"genres": ("Drama",) * 4}}
    with pytest.raises(
        DataError, match="item 'wide' holds 4 values of 'genres'"
    ):
        extend_catalogue(ragged_model(), ITEMS, SPECS, new_table(rows))
