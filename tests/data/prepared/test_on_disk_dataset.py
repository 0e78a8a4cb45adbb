"""The on-disk prepared dataset gives the in-memory path's examples."""

import collections
import json
import os

import numpy as np
import pytest

from tests.run_helpers import write_token_interactions
from tfrec_tricks.data.in_memory_dataset import prepare
from tfrec_tricks.data.in_memory_item_features import with_item_features
from tfrec_tricks.data.item_features.item_file import ItemFeatureTable
from tfrec_tricks.data.prefix_merging import merge_prefixes
from tfrec_tricks.data.prepared.item_features import ItemFeatureRequest
from tfrec_tricks.data.prepared.on_disk_dataset import OnDiskDataset
from tfrec_tricks.data.prepared.writer import write_prepared
from tfrec_tricks.data.sources import synthetic
from tfrec_tricks.data.sources.loaders import load_file
from tfrec_tricks.data.train_windows import train_windows
from tfrec_tricks.data.user_sequences import user_sequences
from tfrec_tricks.errors import DataError
from tfrec_tricks.ownership import RECORD_FILE

SESSIONS = """SessionId\tItemId\tTime
s1\ta\t10
s1\tb\t11
s2\tc\t5
s1\ta\t12
s2\ta\t6
s3\tb\t1
s3\tc\t2
s3\td\t3
s3\te\t4
s3\tb\t5
s4\te\t9
s1\tc\t13
s1\td\t14
s5\ta\t1
s5\tb\t1
"""


def rows_multiset(arrays):
    """Each row as a hashable tuple (NaN-safe), counted."""
    names = sorted(arrays)
    count = len(arrays["target"])
    rows = collections.Counter()
    for i in range(count):
        rows[
            tuple(
                np.nan_to_num(np.asarray(arrays[n][i]), nan=-7.0).tobytes()
                for n in names
            )
        ] += 1
    return names, rows


def collect(dataset):
    """A tf.data dataset of (batched or not) example dicts as arrays."""
    parts = collections.defaultdict(list)
    for element in dataset:
        for name, value in element.items():
            value = value.numpy()
            parts[name].append(value if value.ndim > 0 else value[None])
    return {
        name: np.concatenate(
            [
                v if v.ndim > 1 or name in ("target", "user") else v[None]
                for v in values
            ]
        )
        for name, values in parts.items()
    }


def both_paths(
    table, tmp_path, max_len, split="recbole", shards=3, min_feature_count=1
):
    data = prepare(
        table, max_len=max_len, split=split, min_feature_count=min_feature_count
    )
    sequences = user_sequences(
        table.users,
        table.items,
        table.timestamps,
        table.numeric,
        split=split,
        tokens=table.tokens,
    )
    path = write_prepared(
        sequences,
        str(tmp_path / f"prepared-{max_len}-{split}-{min_feature_count}"),
        {
            "max_len": max_len,
            "split": split,
            "min_feature_count": min_feature_count,
        },
        num_shards=shards,
    )
    return data, OnDiskDataset(path)


def assert_same_examples(memory_arrays, dataset):
    streamed = collect(dataset)
    names, expected = rows_multiset(memory_arrays)
    streamed_names, got = rows_multiset(streamed)
    assert streamed_names == names
    assert got == expected


TABLES = {
    "synthetic": lambda tmp: (
        synthetic.generate(num_users=40, num_items=60, seed=2).interactions
    ),
    "sessions": lambda tmp: load_file(_write(tmp, SESSIONS), "sessions"),
    # Token columns (device: empty values, kiosk at test positions only).
    "tokens": lambda tmp: load_file(
        write_token_interactions(tmp / "shop.inter", empty=True), "recbole"
    ),
}


def _write(tmp_path, text):
    path = tmp_path / "sessions.txt"
    path.write_text(text)
    return str(path)


@pytest.mark.slow
@pytest.mark.parametrize("source", sorted(TABLES))
@pytest.mark.parametrize("max_len", [3, 50])
@pytest.mark.parametrize("split", ["recbole", "every-user"])
def test_same_examples_as_in_memory(tmp_path, source, max_len, split):
    table = TABLES[source](tmp_path)
    data, dataset = both_paths(table, tmp_path, max_len, split)
    for name in ("train", "validation", "test"):
        examples = getattr(data, name)
        assert_same_examples(examples.as_dict(), dataset.examples(name))
        assert dataset.num_examples(name) == len(examples)
    assert_same_examples(
        merge_prefixes(data.train),
        dataset.examples("train", every_position=True),
    )
    for stride in sorted({1, 2, max_len}):
        assert_same_examples(
            train_windows(data.train, stride),
            dataset.examples("train", window_stride=stride),
        )


@pytest.mark.slow
@pytest.mark.parametrize("rows", ["prefixes", "every_position", "windows"])
@pytest.mark.parametrize("bucket", [False, True])
def test_batches_hold_every_example_once(tmp_path, rows, bucket):
    table = TABLES["synthetic"](tmp_path)
    data, dataset = both_paths(table, tmp_path, 8)
    options = {
        "prefixes": {},
        "every_position": {"every_position": True},
        "windows": {"window_stride": 5},
    }[rows]
    batches = dataset.batches(
        "train",
        batch_size=16,
        shuffle=True,
        seed=1,
        bucket_by_length=bucket,
        **options,
    )
    memory = {
        "prefixes": lambda: data.train.as_dict(),
        "every_position": lambda: merge_prefixes(data.train),
        "windows": lambda: train_windows(data.train, 5),
    }[rows]()
    assert_same_examples(memory, batches)
    if rows == "windows" and not bucket:
        # batch_size counts windows (rows), not target positions.
        sizes = [len(batch["target"]) for batch in batches]
        assert sizes[:-1] == [16] * (len(sizes) - 1)
    # The count Keras sees is the count of batches there are.
    assert int(batches.cardinality()) == sum(1 for _ in batches)
    if bucket:
        for batch in batches:
            lengths = (batch["history"].numpy() > 0).sum(axis=1)
            band = np.searchsorted([2, 3, 4, 5, 6, 7, 8], lengths, side="right")
            assert len(set(band)) == 1


@pytest.mark.slow
def test_shuffled_batches_are_seeded(tmp_path):
    table = TABLES["synthetic"](tmp_path)
    _, dataset = both_paths(table, tmp_path, 8)

    def targets(seed):
        batches = dataset.batches("train", 16, shuffle=True, seed=seed)
        return np.concatenate([b["target"].numpy() for b in batches])

    np.testing.assert_array_equal(targets(3), targets(3))
    assert not np.array_equal(targets(3), targets(4))


def test_statistics_and_vocabulary_equal_in_memory(tmp_path):
    table = TABLES["synthetic"](tmp_path)
    data, dataset = both_paths(table, tmp_path, 8)
    assert dataset.vocabulary == data.vocabulary
    assert dataset.num_items == data.num_items
    np.testing.assert_array_equal(
        dataset.statistics.item_counts, data.statistics.item_counts
    )
    assert dataset.statistics.moments == data.statistics.moments


# --- item features ----------------------------------------------------------


def _genres(item_names):
    rows = {name: {"genre": f"g{k % 3}"} for k, name in enumerate(item_names)}
    rows["cold"] = {"genre": "g1"}
    return ItemFeatureTable({"genre": "token"}, rows, "x.item")


def test_item_features_as_in_memory(tmp_path):
    table = TABLES["synthetic"](tmp_path)
    data = prepare(table, max_len=8)
    attributes = _genres(data.vocabulary.items[1:])
    memory = with_item_features(data, attributes)
    sequences = user_sequences(table.users, table.items, table.timestamps)
    path = write_prepared(
        sequences,
        str(tmp_path / "p"),
        {"max_len": 8},
        2,
        item_features=ItemFeatureRequest(attributes, lambda *_: ["genre"]),
    )
    dataset = OnDiskDataset(path)
    assert dataset.item_feature_names == ["genre"]
    assert dataset.vocabulary == memory.vocabulary
    assert dataset.num_items == memory.num_items
    np.testing.assert_array_equal(dataset.trained_items, memory.trained_items)
    assert dataset.item_features.specs == memory.item_features.specs
    np.testing.assert_array_equal(
        dataset.item_features.values["genre"],
        memory.item_features.values["genre"],
    )
    assert dataset.summary().endswith("; item features: ['genre']")
    # The examples are the in-memory ones: cold items are in none.
    assert_same_examples(memory.test.as_dict(), dataset.examples("test"))


def test_a_dataset_without_item_features_has_none(prepared):
    dataset = OnDiskDataset(prepared)
    assert dataset.item_feature_names == []
    assert dataset.item_features is None and dataset.trained_items is None
    assert "item features" not in dataset.summary()


def test_a_dataset_prepared_before_item_features_has_none(prepared):
    _edit(
        os.path.join(prepared, "metadata.json"),
        lambda metadata: metadata.pop("item_feature_names"),
    )
    assert OnDiskDataset(prepared).item_features is None


@pytest.fixture
def with_features(tmp_path):
    table = TABLES["synthetic"](tmp_path)
    sequences = user_sequences(table.users, table.items, table.timestamps)
    attributes = _genres(sequences.item_names[1:])
    return write_prepared(
        sequences,
        str(tmp_path / "p"),
        {"max_len": 8},
        2,
        item_features=ItemFeatureRequest(attributes, lambda *_: ["genre"]),
    )


@pytest.mark.parametrize(
    "name", ["item_features.json", "item_features.npz", "trained_items.npy"]
)
def test_a_missing_or_changed_item_feature_file_is_refused(with_features, name):
    file = os.path.join(with_features, name)
    data = bytearray(open(file, "rb").read())
    data[-2] ^= 1
    open(file, "wb").write(bytes(data))
    with pytest.raises(DataError, match=f"SHA-256 differs.*{name}"):
        OnDiskDataset(with_features)
    os.remove(file)
    with pytest.raises(DataError, match=f"{name} listed in metadata.json"):
        OnDiskDataset(with_features)


def test_item_features_named_but_not_listed_are_refused(with_features):
    # metadata.json edited to list the files no more: named, still missing.
    def unlist(metadata):
        metadata["files"] = [
            entry
            for entry in metadata["files"]
            if not entry["file"].startswith(("item_features", "trained"))
        ]

    _edit(os.path.join(with_features, "metadata.json"), unlist)
    for name in (
        "item_features.json",
        "item_features.npz",
        "trained_items.npy",
    ):
        os.remove(os.path.join(with_features, name))
    with pytest.raises(DataError, match="item_features.json is missing"):
        OnDiskDataset(with_features)


# --- token features ---------------------------------------------------------


@pytest.mark.parametrize("bucket", [False, True])
def test_token_features_as_in_memory(tmp_path, bucket):
    # Values of fewer than 2 training interactions are out-of-vocabulary.
    table = TABLES["tokens"](tmp_path)
    data, dataset = both_paths(table, tmp_path, 4, min_feature_count=2)
    assert dataset.token_features == data.token_features
    assert dataset.token_feature_names == ["channel", "device"]
    assert dataset.metadata["token_feature_names"] == ["channel", "device"]
    assert "; token features: ['channel', 'device']" in dataset.summary()
    # The batches hold int32 ids aligned with the history, 0 at padding.
    batch = next(iter(dataset.batches("train", 8, bucket_by_length=bucket)))
    device = batch["device"].numpy()
    assert device.dtype == np.int32 and device.shape == batch["history"].shape
    assert (device[batch["history"].numpy() == 0] == 0).all()
    # A selection yields those only, as InMemoryDataset's does.
    memory = data.select_token_features(["device"])
    selected = dataset.select_token_features(["device"])
    assert selected.token_features == memory.token_features
    assert dataset.token_feature_names == ["channel", "device"]  # unchanged
    for split in ("train", "test"):
        examples = getattr(memory, split)
        assert set(examples.tokens) == {"device"}
        assert_same_examples(
            examples.as_dict(),
            selected.batches(split, 8, bucket_by_length=bucket),
        )
    assert_same_examples(
        train_windows(memory.train, 2),
        selected.batches("train", 8, window_stride=2),
    )
    none = dataset.select_token_features([])
    assert none.token_features == ()
    assert "channel" not in collect(none.examples("test"))


@pytest.fixture
def with_tokens(tmp_path):
    return both_paths(TABLES["tokens"](tmp_path), tmp_path, 4)[1].path


def test_an_edited_token_feature_file_is_refused(with_tokens):
    # Two values swapped (the ids of the shards would mean others): the
    # size is the same, the SHA-256 is not.
    path = os.path.join(with_tokens, "interaction_tokens.json")
    text = open(path).read()
    assert '"web"' in text and '"app"' in text
    swapped = text.replace('"web"', "@").replace('"app"', '"web"')
    open(path, "w").write(swapped.replace("@", '"app"'))
    with pytest.raises(
        DataError, match="SHA-256 differs.*interaction_tokens.json"
    ):
        OnDiskDataset(with_tokens)


def test_token_features_the_metadata_does_not_name_are_refused(with_tokens):
    _edit(
        os.path.join(with_tokens, "metadata.json"),
        lambda metadata: metadata.update(token_feature_names=["device"]),
    )
    with pytest.raises(DataError, match="holds the token features"):
        OnDiskDataset(with_tokens)


def test_a_dataset_without_token_columns_has_none(prepared):
    dataset = OnDiskDataset(prepared)
    assert dataset.token_features == ()
    assert dataset.metadata["token_feature_names"] == []
    assert "interaction_tokens.json" not in os.listdir(prepared)
    assert "token features" not in dataset.summary()
    # Prepared before token features: no key, no file, none.
    _edit(
        os.path.join(prepared, "metadata.json"),
        lambda metadata: metadata.pop("token_feature_names"),
    )
    assert OnDiskDataset(prepared).token_features == ()


# --- bad input --------------------------------------------------------------


@pytest.fixture
def prepared(tmp_path):
    table = TABLES["synthetic"](tmp_path)
    return both_paths(table, tmp_path, 8, shards=2)[1].path


def test_missing_folder(tmp_path):
    with pytest.raises(DataError, match="not a folder"):
        OnDiskDataset(str(tmp_path / "nowhere"))


def test_half_written_folder(prepared):
    os.remove(os.path.join(prepared, "metadata.json"))
    with pytest.raises(DataError, match="metadata.json is missing"):
        OnDiskDataset(prepared)


def test_other_format_version(prepared):
    path = os.path.join(prepared, "metadata.json")
    with open(path) as handle:
        metadata = json.load(handle)
    metadata["format_version"] = 99
    with open(path, "w") as handle:
        json.dump(metadata, handle)
    with pytest.raises(DataError, match="format version 99"):
        OnDiskDataset(prepared)


def test_changed_shard(prepared):
    shard = sorted(f for f in os.listdir(prepared) if f.endswith(".tfrecord"))
    path = os.path.join(prepared, shard[0])
    data = bytearray(open(path, "rb").read())
    data[20] ^= 1
    open(path, "wb").write(bytes(data))
    with pytest.raises(DataError, match="SHA-256 differs"):
        OnDiskDataset(prepared)


def test_missing_and_extra_shards(prepared):
    shards = sorted(f for f in os.listdir(prepared) if f.endswith(".tfrecord"))
    os.rename(
        os.path.join(prepared, shards[1]),
        os.path.join(prepared, "sequences-00009-of-00010.tfrecord"),
    )
    with pytest.raises(DataError, match="is missing"):
        OnDiskDataset(prepared)


def test_every_file_is_in_the_manifest(tmp_path):
    table = TABLES["synthetic"](tmp_path)
    sequences = user_sequences(table.users, table.items, table.timestamps)
    graph = np.array([["1", "2"], ["2", "3"]])
    path = write_prepared(
        sequences, str(tmp_path / "p"), {"max_len": 8}, 2, item_graph=graph
    )
    dataset = OnDiskDataset(path)
    listed = [entry["file"] for entry in dataset.metadata["files"]]
    # All but metadata.json and the tool's record of what it wrote.
    assert listed == sorted(
        f for f in os.listdir(path) if f not in ("metadata.json", RECORD_FILE)
    )
    assert {"vocabulary.json", "statistics.json", "item_graph.json"} <= set(
        listed
    )
    np.testing.assert_array_equal(dataset.item_graph(), graph)
    os.remove(os.path.join(path, "item_graph.json"))
    with pytest.raises(DataError, match="item_graph.json listed in metadata"):
        OnDiskDataset(path)


def _edit(path, change):
    with open(path) as handle:
        document = json.load(handle)
    change(document)
    with open(path, "w") as handle:
        json.dump(document, handle)


def test_edited_vocabulary(prepared):
    def swap(vocabulary):
        vocabulary["items"][1:3] = vocabulary["items"][2:0:-1]

    _edit(os.path.join(prepared, "vocabulary.json"), swap)
    with pytest.raises(DataError, match="SHA-256 differs.*vocabulary.json"):
        OnDiskDataset(prepared)


def test_changed_statistics_size(prepared):
    _edit(os.path.join(prepared, "statistics.json"), lambda d: d.clear())
    with pytest.raises(DataError, match="statistics.json was changed"):
        OnDiskDataset(prepared)
    # Sizes are compared even without hashes.
    with pytest.raises(DataError, match="bytes, metadata.json says"):
        OnDiskDataset(prepared, verify_hashes=False)


@pytest.mark.parametrize("name", ["notes.txt", ".hidden", "sub/x.json"])
def test_extra_file(prepared, name):
    file = os.path.join(prepared, *name.split("/"))
    os.makedirs(os.path.dirname(file), exist_ok=True)
    open(file, "w").write("{}")
    with pytest.raises(DataError, match=f"does not list: \\['{name}'\\]"):
        OnDiskDataset(prepared)


def test_listed_file_outside_the_folder(prepared):
    def escape(metadata):
        metadata["files"][0]["file"] = "../elsewhere"

    _edit(os.path.join(prepared, "metadata.json"), escape)
    with pytest.raises(DataError, match="'files' must list every file"):
        OnDiskDataset(prepared)


def test_older_format_says_prepare_again(prepared):
    def older(metadata):
        metadata["format_version"] = 1
        del metadata["files"]

    _edit(os.path.join(prepared, "metadata.json"), older)
    with pytest.raises(DataError, match="format version 1.*Prepare it again"):
        OnDiskDataset(prepared)


def test_existing_output_is_not_overwritten(prepared):
    before = sorted(os.listdir(prepared))
    table = TABLES["synthetic"](None)
    sequences = user_sequences(table.users, table.items, table.timestamps)
    with pytest.raises(FileExistsError, match="--overwrite"):
        write_prepared(sequences, prepared, {"max_len": 8})
    assert sorted(os.listdir(prepared)) == before
