"""Item features encoded against a catalogue, checked against arrays
written out by hand; vocabularies, statistics, coverage and persistence."""

import json
import os

import numpy as np
import pytest

from tfrec_tricks.data.item_features import encoding
from tfrec_tricks.data.item_features.encoding import (
    FEATURES_JSON,
    FEATURES_NPZ,
    ItemFeatures,
    ItemFeatureSpec,
    cold_item_names,
    encode_item_features,
)
from tfrec_tricks.data.item_features.item_file import (
    ItemFeatureTable,
    read_item_features,
)
from tfrec_tricks.errors import DataError

NAN = np.nan
KINDS = {
    "genre": "token",
    "tags": "token_seq",
    "year": "float",
    "emb": "float_seq",
}
ROWS = {
    "a": {
        "genre": "Drama",
        "tags": ("x", "y", "x"),
        "year": 1990.0,
        "emb": (1.0, 2.0),
    },
    "b": {"genre": "War", "tags": ("y",), "year": 2000.0, "emb": (3.0,)},
    "c": {"genre": "Drama", "tags": ("z", "y"), "emb": (5.0, 6.0, 7.0)},
    # Not a training item: its tokens and numbers count for nothing.
    "d": {"genre": "Horror", "tags": ("x", "q"), "year": 3000.0, "emb": (1e2,)},
    # Not in the catalogue: a cold-start item.
    "e": {"genre": "Comedy", "tags": ("w",), "year": 1.0},
}
# "f" has no row.
CATALOGUE = ["[PAD]", "a", "b", "c", "d", "f"]
TRAINING = np.array([False, True, True, True, False, False])


def table(rows=None, kinds=None):
    return ItemFeatureTable(
        kinds=dict(kinds or KINDS), rows=rows or ROWS, source="t.item"
    )


def encode(rows=None, kinds=None, names=CATALOGUE, training=TRAINING, **kw):
    return encode_item_features(table(rows, kinds), names, training, **kw)


def spec(features, name):
    return {s.name: s for s in features.specs}[name]


# --- an independent re-computation ------------------------------------------


def test_encoding_written_out_by_hand():
    features = encode()
    assert features.names() == ["genre", "tags", "year", "emb"]
    # Vocabularies of the training items a, b, c: genre Drama 2, War 1;
    # tags y 3 (a, b, c), x 1 (a, once though written twice), z 1.
    assert spec(features, "genre").vocabulary == ("Drama", "War")
    assert spec(features, "tags").vocabulary == ("y", "x", "z")
    expected = {
        "genre": np.array([[0], [2], [3], [2], [1], [0]], np.int32),
        "tags": np.array(
            [
                [0, 0, 0],
                [3, 2, 3],
                [2, 0, 0],
                [4, 2, 0],
                [3, 1, 0],  # d's q: out of vocabulary
                [0, 0, 0],
            ],
            np.int32,
        ),
        "year": np.array(
            [[NAN], [1990], [2000], [NAN], [3000], [NAN]], np.float32
        ),
        "emb": np.array(
            [
                [NAN, NAN, NAN],
                [1, 2, NAN],
                [3, NAN, NAN],
                [5, 6, 7],
                [100, NAN, NAN],
                [NAN, NAN, NAN],
            ],
            np.float32,
        ),
    }
    assert sorted(features.values) == sorted(expected)
    for name, array in expected.items():
        got = features.dense(name)
        assert got.dtype == array.dtype and got.shape == array.shape, name
        np.testing.assert_array_equal(got, array, err_msg=name)
    np.testing.assert_array_equal(
        features.has_row, [False, True, True, True, True, False]
    )
    assert features.has_row.dtype == bool
    # Training values: year 1990, 2000; emb 1, 2, 3, 5, 6, 7.
    assert spec(features, "year").mean == 1995.0
    assert spec(features, "year").variance == 25.0
    assert spec(features, "emb").mean == 4.0
    assert spec(features, "emb").variance == pytest.approx(28 / 6)
    # Of the 5 catalogue items, a, b, c and d have a value (year: a, b, d).
    coverage = {s.name: s.coverage for s in features.specs}
    assert coverage == {"genre": 0.8, "tags": 0.8, "year": 0.6, "emb": 0.8}
    widths = {s.name: s.width for s in features.specs}
    assert widths == {"genre": 1, "tags": 3, "year": 1, "emb": 3}
    sizes = {s.name: s.vocabulary_size for s in features.specs}
    assert sizes == {"genre": 4, "tags": 5, "year": 0, "emb": 0}


def test_min_count_sends_rare_tokens_to_oov():
    features = encode(min_count=2)
    assert spec(features, "genre").vocabulary == ("Drama",)
    assert spec(features, "tags").vocabulary == ("y",)
    np.testing.assert_array_equal(
        features.dense("genre")[:, 0], [0, 2, 1, 2, 1, 0]
    )
    np.testing.assert_array_equal(
        features.dense("tags"),
        [[0, 0, 0], [1, 2, 1], [2, 0, 0], [1, 2, 0], [1, 1, 0], [0, 0, 0]],
    )
    assert encode(min_count=4).specs[1].vocabulary == ()
    assert encode(min_count=4).specs[1].vocabulary_size == 2


@pytest.mark.parametrize("min_count", [0, -1, 1.5, True, "2"])
def test_min_count_below_one_is_refused(min_count):
    with pytest.raises(ValueError, match=f"min_count={min_count!r}"):
        encode(min_count=min_count)


def test_vocabulary_order_is_count_then_token():
    rows = {
        "t1": {"g": ("b", "a", "c")},
        "t2": {"g": ("é", "c", "a", "b", "Z")},
        "t3": {"g": ("c",)},
        "t4": {"g": ("d",)},
    }
    names = ["[PAD]", "t1", "t2", "t3", "t4"]
    training = np.ones(5, bool)
    kinds = {"g": "token_seq"}
    features = encode(rows, kinds, names, training)
    # c 3; a, b 2; then Z, d, é (code point order) 1.
    assert features.specs[0].vocabulary == ("c", "a", "b", "Z", "d", "é")
    # The file's row order does not change it.
    reordered = dict(reversed(list(rows.items())))
    again = encode(reordered, kinds, names, training)
    assert again.specs[0].vocabulary == features.specs[0].vocabulary
    assert again.values["g"] == features.values["g"]


def test_only_training_items_make_vocabularies_and_statistics():
    # Every item is a training item but d: its tokens are OOV.
    features = encode(training=np.array([1, 1, 1, 1, 0, 0], bool))
    assert "Horror" not in spec(features, "genre").vocabulary
    assert "q" not in spec(features, "tags").vocabulary
    assert spec(features, "year").mean == 1995.0
    # With d among them, its year counts.
    features = encode(training=np.array([0, 1, 1, 1, 1, 0], bool))
    assert spec(features, "genre").vocabulary == ("Drama", "Horror", "War")
    assert spec(features, "year").mean == pytest.approx(
        (1990 + 2000 + 3000) / 3
    )
    # The padding flag is ignored; the catalogue decides the widths.
    flags = np.array([1, 0, 0, 0, 0, 0], bool)
    features = encode(training=flags)
    assert spec(features, "genre").vocabulary == ()
    assert spec(features, "tags").width == 3
    np.testing.assert_array_equal(
        features.dense("genre")[:, 0], [0, 1, 1, 1, 1, 0]
    )


def test_float_statistics_without_values_or_spread():
    rows = {"a": {"v": 5.0}, "b": {"v": 5.0}, "c": {"v": 9.0}}
    names = ["[PAD]", "a", "b", "c"]
    features = encode(rows, {"v": "float"}, names, [0, 1, 1, 0])
    assert (features.specs[0].mean, features.specs[0].variance) == (5.0, 1.0)
    features = encode(rows, {"v": "float"}, names, [0, 0, 0, 1])
    assert (features.specs[0].mean, features.specs[0].variance) == (9.0, 1.0)
    features = encode(rows, {"v": "float"}, names, [0, 0, 0, 0])
    assert (features.specs[0].mean, features.specs[0].variance) == (0.0, 1.0)


def test_features_without_any_value_have_width_one():
    kinds = {"t": "token_seq", "f": "float_seq"}
    features = encode({"a": {}}, kinds, ["[PAD]", "a", "b"], [0, 1, 1])
    assert [s.width for s in features.specs] == [1, 1]
    assert [s.coverage for s in features.specs] == [0.0, 0.0]
    np.testing.assert_array_equal(features.dense("t"), np.zeros((3, 1)))
    assert np.isnan(features.dense("f")).all()
    np.testing.assert_array_equal(features.has_row, [False, True, False])


def test_bad_catalogue_or_training_flags():
    with pytest.raises(ValueError, match=r"item_names\[0\]='a'"):
        encode(names=["a", "b"], training=[0, 1])
    with pytest.raises(ValueError, match=r"item_names\[0\]=None"):
        encode(names=[], training=[])
    with pytest.raises(ValueError, match=r"\(6\). Received: shape \(5,\)"):
        encode(training=TRAINING[:5])


def test_cold_item_names_in_file_order():
    assert cold_item_names(table(), CATALOGUE) == ["e"]
    rows = {"z": {}, "a": {}, "y": {}, "[PAD]": {}}
    assert cold_item_names(table(rows), ["[PAD]", "a"]) == ["z", "y", "[PAD]"]
    # Appended to the catalogue, they are encoded, with unseen tokens OOV.
    names = CATALOGUE + cold_item_names(table(), CATALOGUE)
    features = encode(names=names, training=np.append(TRAINING, False))
    assert features.has_row[-1]
    np.testing.assert_array_equal(features.dense("tags")[-1], [1, 0, 0])
    assert features.dense("year")[-1, 0] == 1.0
    assert spec(features, "year").coverage == 4 / 6


def test_summary_rows_and_spec_dicts():
    features = encode()
    assert features.summary_rows()[1] == {
        "name": "tags",
        "kind": "token_seq",
        "vocabulary_size": 5,
        "width": 3,
        "coverage": 0.8,
    }
    dicts = features.spec_dicts()
    assert dicts[0] == {
        "name": "genre",
        "kind": "token",
        "width": 1,
        "vocabulary_size": 4,
        "mean": 0.0,
        "variance": 1.0,
        "num_values": 4,
    }
    assert dicts[2] == {
        "name": "year",
        "kind": "float",
        "width": 1,
        "vocabulary_size": 0,
        "mean": 1995.0,
        "variance": 25.0,
        "num_values": 3,
    }
    json.dumps(dicts)


def test_with_a_file_read_and_selected(tmp_path):
    path = tmp_path / "m.item"
    path.write_text(
        "item_id:token\tclass:token_seq\tyear:float\n"
        "1\tDrama War\t1990\n2\tDrama\t\n3\tComedy\t2000\n",
        encoding="utf-8",
    )
    selected = read_item_features(str(path)).select(["class"])
    features = encode_item_features(
        selected, ["[PAD]", "2", "1"], np.array([0, 1, 1], bool)
    )
    assert features.names() == ["class"]
    np.testing.assert_array_equal(
        features.dense("class"), [[0, 0], [2, 0], [2, 3]]
    )
    assert cold_item_names(selected, ["[PAD]", "2", "1"]) == ["3"]


# --- specs and persistence --------------------------------------------------


def test_spec_round_trip_and_refusals():
    for spec_ in encode().specs:
        assert ItemFeatureSpec.from_dict(spec_.to_dict()) == spec_
        json.dumps(spec_.to_dict())
    with pytest.raises(ValueError, match="kind='tokens'"):
        ItemFeatureSpec("g", "tokens", 1)
    with pytest.raises(ValueError, match="width=0"):
        ItemFeatureSpec("g", "token", 0)
    with pytest.raises(ValueError, match="width=1.0"):
        ItemFeatureSpec("g", "token", 1.0)
    with pytest.raises(ValueError, match="has no vocabulary"):
        ItemFeatureSpec("g", "float", 1, ("a",))
    with pytest.raises(ValueError, match=r"missing \['width'\]"):
        ItemFeatureSpec.from_dict({"name": "g", "kind": "token"})
    with pytest.raises(ValueError, match=r"unknown \['size'\]"):
        ItemFeatureSpec.from_dict(
            {"name": "g", "kind": "token", "width": 1, "size": 3}
        )


def test_save_load_round_trip_is_byte_equal(tmp_path):
    kinds = {"has_row": "token", "a/b": "float_seq", "été": "token_seq"}
    rows = {
        "1": {"has_row": "x", "a/b": (0.1, 0.2), "été": ("é", "è")},
        "2": {"a/b": (1e-30,), "été": ("é",)},
    }
    features = encode(rows, kinds, ["[PAD]", "1", "2", "3"], [0, 1, 0, 1])
    folder = str(tmp_path / "out")
    assert features.save(folder) == [FEATURES_JSON, FEATURES_NPZ]
    assert sorted(os.listdir(folder)) == sorted([FEATURES_JSON, FEATURES_NPZ])
    loaded = ItemFeatures.load(folder)
    assert loaded.specs == features.specs
    assert loaded.names() == ["has_row", "a/b", "été"]
    for name, rows in features.values.items():
        got = loaded.values[name]
        for array, stored in [
            (rows.values, got.values),
            (rows.row_splits, got.row_splits),
        ]:
            assert stored.dtype == array.dtype and stored.shape == array.shape
            assert stored.tobytes() == array.tobytes(), name
    assert loaded.has_row.tobytes() == features.has_row.tobytes()
    assert loaded.has_row.dtype == bool
    assert loaded.spec_dicts() == features.spec_dicts()


def test_load_refuses_missing_or_foreign_files(tmp_path):
    folder = tmp_path / "out"
    with pytest.raises(DataError, match="item_features.json"):
        ItemFeatures.load(str(folder))
    encode().save(str(folder))
    document = json.loads((folder / FEATURES_JSON).read_text())
    document["num_items"] = 7
    (folder / FEATURES_JSON).write_text(json.dumps(document))
    with pytest.raises(DataError, match=r"'has_row' should be bool \(7,\)"):
        ItemFeatures.load(str(folder))
    (folder / FEATURES_JSON).write_text('{"specs": [{"name": "g"}]}')
    with pytest.raises(DataError, match="not an item-features file"):
        ItemFeatures.load(str(folder))
    os.remove(folder / FEATURES_NPZ)
    with pytest.raises(DataError, match="item_features.npz"):
        ItemFeatures.load(str(folder))


def wide_file(folder, widest, items=200):
    """An .item file: items of 3 to 7 tags, item "w" (line 5) of
    ``widest``."""
    lines = ["item_id:token\ttags:token_seq"]
    for k in range(items):
        width = widest if k == 3 else 3 + k % 5
        item = "w" if k == 3 else f"i{k}"
        lines.append(f"{item}\t" + " ".join(f"t{j % 50}" for j in range(width)))
    path = folder / "wide.item"
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def encode_file(path):
    table = read_item_features(path)
    names = ["[PAD]", *table.rows]
    training = np.ones(len(names), bool)
    return encode_item_features(table, names, training)


def test_storage_follows_the_number_of_values_not_the_widest_row(tmp_path):
    # One row of 20,000 tokens among 199 rows of 3 to 7: stored padded it
    # made every row 20,000 wide (200 x 20,000 ids); ragged it adds its own.
    with pytest.warns(UserWarning) as caught:
        features = encode_file(wide_file(tmp_path, 20_000))
    rows = features.values["tags"]
    total = 20_000 + sum(3 + k % 5 for k in range(200) if k != 3)
    assert rows.values.shape == (total,) and rows.values.dtype == np.int32
    assert rows.row_splits.shape == (202,)  # padding, then 200 items
    assert rows.nbytes() == total * 4 + 202 * 8
    assert features.specs[0].width == 20_000
    assert features.spec_dicts()[0]["num_values"] == total
    np.testing.assert_array_equal(rows.row(4)[:3], [2, 3, 4])
    # The row is named: file:line, item, its width and the others'.
    (warning,) = caught
    message = str(warning.message)
    assert message.startswith(f"{tmp_path / 'wide.item'}:5: item 'w' holds ")
    assert "20,000 values of 'tags'" in message
    assert "(median 5, 99th percentile 7)" in message


def test_an_ordinary_spread_of_widths_is_not_warned_of(tmp_path, recwarn):
    # The Amazon-like spread: widest 37 among rows of 3 to 7.
    encode_file(wide_file(tmp_path, 37))
    assert not [w for w in recwarn if w.category is UserWarning]


def test_a_row_above_the_cap_is_refused_with_file_and_line(
    tmp_path, monkeypatch
):
    monkeypatch.setattr(encoding, "MAX_ROW_VALUES", 1_000)
    with pytest.raises(DataError) as error:
        encode_file(wide_file(tmp_path, 1_001))
    assert str(error.value).startswith(
        f"{tmp_path / 'wide.item'}:5: item 'w' holds 1,001 values of 'tags'; "
        "an item holds at most 1,000 values of a feature"
    )
    encode_file(wide_file(tmp_path, 1_000))  # at the cap: kept


def test_a_file_saved_padded_before_ragged_storage_still_loads(tmp_path):
    features = encode()
    folder = tmp_path / "old"
    features.save(str(folder))
    # The layout written before: value_k padded [N, width], no row splits.
    arrays = {"has_row": features.has_row}
    for k, name in enumerate(features.names()):
        arrays[f"value_{k}"] = features.dense(name)
    with open(folder / FEATURES_NPZ, "wb") as handle:
        np.savez(handle, **arrays)
    loaded = ItemFeatures.load(str(folder))
    for name in features.names():
        assert loaded.values[name] == features.values[name], name
    assert loaded.spec_dicts() == features.spec_dicts()


def test_load_refuses_row_splits_that_do_not_fit(tmp_path):
    folder = tmp_path / "out"
    encode().save(str(folder))
    with np.load(folder / FEATURES_NPZ) as stored:
        arrays = {key: stored[key] for key in stored.files}
    # A row that ends before it starts.
    arrays["row_splits_1"][1] = arrays["row_splits_1"][-1]
    with open(folder / FEATURES_NPZ, "wb") as handle:
        np.savez(handle, **arrays)
    with pytest.raises(DataError, match="'value_1'.*non-decreasing"):
        ItemFeatures.load(str(folder))
