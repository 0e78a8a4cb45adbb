"""Categorical per-interaction features: reading the ``token`` columns of
``.inter`` files, vocabularies from the training positions only, and the
examples' ids."""

import numpy as np
import pytest

from tests.run_helpers import write_token_interactions
from tfrec_tricks.data import prepare
from tfrec_tricks.data.interaction_tokens import (
    InteractionTokenSpec,
    encode_tokens,
    interaction_token_features,
    specs_from_json,
    specs_json,
    token_ids,
    token_spec,
    training_rows,
)
from tfrec_tricks.data.item_features.encoding import (
    FIRST_TOKEN_ID,
    OOV_ID,
    PAD_ID,
)
from tfrec_tricks.data.sources.encoded_interactions import read_encoded
from tfrec_tricks.data.sources.loaders import load_file, read_records
from tfrec_tricks.data.sources.named_sources import load_source
from tfrec_tricks.data.tf_data_pipeline import make_dataset
from tfrec_tricks.data.user_sequences import user_sequences


def test_recbole_token_columns_are_read(tmp_path):
    path = write_token_interactions(tmp_path / "shop.inter", empty=True)
    columns, records = read_records(path)
    assert columns.tokens == ("device", "channel")
    first = next(records)
    assert first.tokens == ("web", "ads")
    # Still part of the row, for exact duplicates.
    assert first.other == ("web", "ads")
    table = load_file(path)
    assert sorted(table.tokens) == ["channel", "device"]
    assert table.tokens["device"][2] == ""  # empty: no value
    encoded = read_encoded([path]).to_interactions()
    np.testing.assert_array_equal(
        encoded.tokens["device"], table.tokens["device"]
    )
    assert "token columns: ['channel', 'device']" in table.summary()


def test_other_formats_have_no_token_columns(tmp_path):
    path = tmp_path / "u.data"
    path.write_text("1\t2\t3\t100\n")
    columns, _ = read_records(str(path))
    assert columns.tokens == ()


def test_duplicate_rows_drop_their_tokens_too(tmp_path):
    path = tmp_path / "d.inter"
    path.write_text(
        "user_id:token\titem_id:token\ttimestamp:float\tdevice:token\n"
        "u\ta\t1\tweb\nu\ta\t1\tweb\nu\tb\t2\tapp\nu\tc\t3\ttv\n"
    )
    table = read_encoded([str(path)])
    assert table.duplicates.count == 1
    assert table.to_interactions().tokens["device"].tolist() == [
        "web",
        "app",
        "tv",
    ]


def _sequences(devices, users=None):
    users = users or ["u"] * len(devices)
    items = [f"i{k}" for k in range(len(devices))]
    return user_sequences(
        np.array(users),
        np.array(items),
        tokens={"device": np.array(devices)},
    )


def test_training_rows_are_targets_and_their_histories():
    # u: 5 interactions -> targets 1, 2 train; 3 validation, 4 test.
    # v: 2 interactions (too few to hold one out) -> target 1 trains.
    # w: 1 interaction -> no example.
    sequences = _sequences(list("abcdeabc"), ["u"] * 5 + ["v"] * 2 + ["w"])
    assert training_rows(sequences).tolist() == [1, 1, 1, 0, 0, 1, 1, 0]


def test_vocabulary_from_training_positions_only_with_oov():
    # Training rows hold web x2, app x1; "tv" is in the test position only.
    sequences = _sequences(["web", "app", "web", "web", "tv"])
    specs, ids = interaction_token_features(sequences)
    assert specs[0].vocabulary == ("web", "app")
    assert ids["device"].tolist() == [2, 3, 2, 2, OOV_ID]
    # Rarer than min_count: out of vocabulary.
    specs, ids = interaction_token_features(sequences, min_count=2)
    assert specs[0].vocabulary == ("web",)
    assert ids["device"].tolist() == [2, OOV_ID, 2, 2, OOV_ID]


def test_ties_are_ordered_by_value_and_empty_is_no_value():
    sequences = _sequences(["b", "", "a", "x", "y"])
    specs, ids = interaction_token_features(sequences)
    assert specs[0].vocabulary == ("a", "b")
    assert ids["device"].tolist() == [3, PAD_ID, 2, OOV_ID, OOV_ID]
    assert specs[0].coverage == pytest.approx(0.8)


def test_bad_min_count_is_refused():
    with pytest.raises(ValueError, match="min_count"):
        interaction_token_features(_sequences(["a"] * 4), min_count=0)


def test_encode_tokens_and_spec_round_trip():
    assert encode_tokens(np.array([], str), ("a",)).tolist() == []
    spec = InteractionTokenSpec("device", ("web",), 1.0)
    assert spec.vocabulary_size == FIRST_TOKEN_ID + 1
    assert InteractionTokenSpec.from_dict(spec.to_dict()) == spec
    assert spec.summary_row() == {
        "name": "device",
        "kind": "token",
        "vocabulary_size": 3,
        "coverage": 1.0,
    }


def test_a_spec_from_counts_is_the_spec_of_the_column():
    # What the Beam engine builds from summed counts.
    sequences = _sequences(["b", "", "a", "x", "y", "b"], ["u"] * 6)
    (spec,), ids = interaction_token_features(sequences, min_count=1)
    training = {"b": 1, "a": 1}  # positions 0..3; "" left out; x one
    training["x"] = 1
    assert token_spec("device", training, 5, 6) == spec
    assert spec.coverage == 5 / 6
    assert token_spec("device", training, 5, 6, min_count=2).vocabulary == ()
    assert token_spec("device", {}, 0, 0) == InteractionTokenSpec("device")
    lookup = token_ids(spec.vocabulary)
    values = ["b", "", "a", "x", "y", "b"]
    assert [lookup.get(v, OOV_ID) for v in values] == ids["device"].tolist()


def test_specs_json_is_sorted_by_name_and_reads_back():
    specs = [
        InteractionTokenSpec("device", ("web", "app"), 0.75),
        InteractionTokenSpec("channel", ("ads",), 1 / 3),
    ]
    text = specs_json(specs)
    assert specs_from_json(text) == tuple(specs[::-1])
    assert specs_json(specs[::-1]) == text
    assert specs_json([]) == "[]"
    with pytest.raises(ValueError, match="token feature specs"):
        specs_from_json('{"name": "device"}')


def test_prepared_examples_carry_the_ids_aligned_with_history(tmp_path):
    path = write_token_interactions(tmp_path / "shop.inter")
    data = prepare(load_source("file", data_path=path).interactions, max_len=4)
    assert data.token_feature_names == ["channel", "device"]
    device = dict(zip(data.token_feature_names, data.token_features))["device"]
    # kiosk is only ever at a test position.
    assert "kiosk" not in device.vocabulary
    for split in (data.train, data.validation, data.test):
        tokens = split.tokens["device"]
        assert tokens.dtype == np.int32
        np.testing.assert_array_equal(tokens > 0, split.history > 0)
    assert not (data.validation.tokens["device"] == OOV_ID).any()
    # Merged prefixes, training windows and buckets carry them as ints.
    for options in (
        {"every_position": True},
        {"window_stride": 2},
        {"bucket_by_length": True},
    ):
        batch = next(iter(make_dataset(data.train, 8, **options)))
        assert batch["device"].dtype.name == "int32"
        np.testing.assert_array_equal(
            batch["device"].numpy() > 0, batch["history"].numpy() > 0
        )
    selected = data.select_token_features(["device"])
    assert selected.token_feature_names == ["device"]
    assert sorted(selected.train.as_dict()) == [
        "device",
        "history",
        "target",
        "time_gap",
        "user",
    ]
