"""The Beam engine prepares the same dataset as the local engine.

End to end, through ``prepare_with_beam``; the pipeline's phases are tested
in the files of their modules (``test_beam_*.py``).
"""

import json
import os

import numpy as np
import pytest
import tensorflow as tf

from tests.data.prepared.test_on_disk_dataset import (
    SESSIONS,
    collect,
    rows_multiset,
)
from tfrec_tricks.data.beam.prepare_with_beam import prepare_with_beam
from tfrec_tricks.data.item_features.item_file import ItemFeatureTable
from tfrec_tricks.data.prepared.format import parse_users
from tfrec_tricks.data.prepared.item_features import (
    ITEM_FEATURE_FILES,
    ItemFeatureRequest,
)
from tfrec_tricks.data.prepared.on_disk_dataset import OnDiskDataset
from tfrec_tricks.data.prepared.writer import write_prepared
from tfrec_tricks.data.sources import synthetic
from tfrec_tricks.data.sources.encoded_interactions import read_encoded
from tfrec_tricks.data.user_sequences import user_sequences
from tfrec_tricks.errors import DataError
from tfrec_tricks.ownership import RECORD_FILE

pytestmark = pytest.mark.slow


def _write_synthetic(folder) -> str:
    """Synthetic interactions as two u.data files; returns their glob.

    Rows alternate between the files (a user's rows are in both), times
    are rounded to 10 minutes (ties, broken by file order) and ratings
    vary (a numeric feature).
    """
    table = synthetic.generate(num_users=40, num_items=60, seed=2).interactions
    lines = [
        f"{user}\t{item}\t{1 + row % 5}.0\t{int(time) // 600 * 600}\n"
        for row, (user, item, time) in enumerate(
            zip(table.users, table.items, table.timestamps)
        )
    ]
    for part in range(2):
        (folder / f"ratings-{part}.tsv").write_text("".join(lines[part::2]))
    return str(folder / "ratings-*.tsv")


def _write_sessions(folder) -> str:
    path = folder / "sessions.txt"
    path.write_text(SESSIONS)
    return str(path)


def _write_tokens(folder) -> str:
    """Two RecBole files with a ``device`` token column (and a ``page``
    one in the first only: dropped, as read_encoded drops it). Empty
    values; ``fax`` at a single training position (out-of-vocabulary with
    min_feature_count 2); ``kiosk`` at test positions only; two rows the
    item bound drops. Returns their glob."""
    for part in range(2):
        header = "user_id:token\titem_id:token\ttimestamp:float\tdevice:token"
        lines = [header + ("\tpage:token" if part == 0 else "")]
        for user in range(part, 14, 2):
            for step in range(6):
                device = ["web", "app", "tv", "web"][(user + step) % 4]
                if step == 5:
                    device = "kiosk"
                elif (user + step) % 5 == 0:
                    device = ""
                elif user == 3 and step == 0:
                    device = "fax"
                item = f"i{(user * 3 + step * 5) % 11}"
                page = "\thome" if part == 0 else ""
                lines.append(f"u{user}\t{item}\t{100 * step}\t{device}{page}")
        # Items (and so a user) the item bound drops, with their values.
        lines.append(f"u99\tz{part}\t0\tfax" + ("\thome" if part == 0 else ""))
        (folder / f"shop-{part}.inter").write_text("\n".join(lines) + "\n")
    return str(folder / "shop-*.inter")


CASES = {
    # No filter; a glob over two files.
    "synthetic": (
        _write_synthetic,
        "udata",
        {"max_len": 8, "split": "recbole"},
    ),
    # Both bounds (every-user raises the user bound to 3): three rounds.
    "synthetic-filtered": (
        _write_synthetic,
        "udata",
        {"max_len": 3, "split": "every-user", "min_item_interactions": 15},
    ),
    # Both bounds; dropping user s4 leaves item e too rare: two rounds.
    "sessions": (
        _write_sessions,
        "sessions",
        {
            "max_len": 3,
            "split": "recbole",
            "min_user_interactions": 2,
            "min_item_interactions": 2,
            "source": "sessions.txt",
        },
    ),
    # Token columns; an item bound: coverage is of the kept interactions.
    "tokens": (
        _write_tokens,
        "recbole",
        {
            "max_len": 3,
            "split": "recbole",
            "min_item_interactions": 3,
            "min_feature_count": 2,
        },
    ),
}


def _local_engine(files, file_format, options, output, item_features=None):
    """The local engine on the files, read as load_source reads them
    (exact duplicates dropped unless options say otherwise)."""
    table = read_encoded(
        files,
        file_format,
        drop_duplicates=options.get("drop_duplicates", True),
    ).to_interactions()
    sequences = user_sequences(
        table.users,
        table.items,
        table.timestamps,
        table.numeric,
        min_user_interactions=options.get("min_user_interactions", 1),
        min_item_interactions=options.get("min_item_interactions", 0),
        split=options["split"],
        tokens=table.tokens,
    )
    return write_prepared(
        sequences, output, options, num_shards=2, item_features=item_features
    )


@pytest.fixture(scope="module", params=sorted(CASES))
def both_engines(request, tmp_path_factory):
    """(local folder, beam folder) prepared from the same files."""
    write, file_format, options = CASES[request.param]
    folder = tmp_path_factory.mktemp(request.param)
    pattern = write(folder)
    files = sorted(str(p) for p in folder.glob(os.path.basename(pattern)))
    local = _local_engine(files, file_format, options, str(folder / "local"))
    beam = prepare_with_beam(
        [pattern], str(folder / "beam"), options, file_format, num_shards=3
    )
    return local, beam


def _read(folder, name, mode="r"):
    with open(os.path.join(folder, name), mode) as handle:
        return handle.read()


def test_vocabulary_is_byte_equal(both_engines):
    local, beam = both_engines
    vocabulary = _read(beam, "vocabulary.json", "rb")
    assert vocabulary == _read(local, "vocabulary.json", "rb")


@pytest.mark.parametrize(
    "split, every_position",
    [
        ("train", False),
        ("train", True),
        ("validation", False),
        ("test", False),
    ],
)
def test_same_examples(both_engines, split, every_position):
    local, beam = both_engines
    expected = OnDiskDataset(local).examples(split, every_position)
    got = OnDiskDataset(beam).examples(split, every_position)
    assert OnDiskDataset(beam).num_examples(split) == OnDiskDataset(
        local
    ).num_examples(split)
    assert rows_multiset(collect(got)) == rows_multiset(collect(expected))


def test_same_statistics(both_engines):
    local, beam = both_engines
    expected = OnDiskDataset(local).statistics
    got = OnDiskDataset(beam).statistics
    np.testing.assert_array_equal(got.item_counts, expected.item_counts)
    assert sorted(got.moments) == sorted(expected.moments)
    for name, moments in expected.moments.items():
        assert got.moments[name].weight == moments.weight
        assert got.moments[name].mean == pytest.approx(moments.mean, rel=1e-9)
        assert got.moments[name].m2 == pytest.approx(moments.m2, rel=1e-9)


def test_same_metadata(both_engines):
    local, beam = both_engines
    expected = json.loads(_read(local, "metadata.json"))
    got = json.loads(_read(beam, "metadata.json"))
    for key in (
        "train_ends",
        "validation_positions",
        "test_positions",
        "num_items",
        "num_users",
        "num_interactions",
        "feature_names",
        "token_feature_names",
        "options",
    ):
        assert got[key] == expected[key], key
    assert got["engine"] == "beam"
    assert sum(shard["users"] for shard in got["shards"]) == got["num_users"]
    assert [shard["file"] for shard in got["shards"]] == [
        f"sequences-0000{i}-of-00003.tfrecord" for i in range(3)
    ]
    # Nothing else: no Beam temporary or side files.
    # Nothing else but the tool's record of what it wrote (``ownership``).
    tokens = ["interaction_tokens.json"] if got["token_feature_names"] else []
    assert sorted(os.listdir(beam)) == [
        RECORD_FILE,
        *tokens,
        "metadata.json",
        *(f"sequences-0000{i}-of-00003.tfrecord" for i in range(3)),
        "statistics.json",
        "vocabulary.json",
    ]


def _records(folder):
    """Every user record of the folder's shards, by user index."""
    dataset = OnDiskDataset(folder)
    records = {}
    for serialized in tf.data.TFRecordDataset(dataset.files).batch(64):
        users = parse_users(
            serialized, dataset.feature_names, dataset.token_feature_names
        )
        for row, user in enumerate(users["user"].numpy()):
            records[int(user)] = {
                name: (
                    value[row].numpy().tolist()
                    if isinstance(value, tf.RaggedTensor)
                    else int(value[row])
                )
                for name, value in users.items()
            }
    return records


def test_same_user_records(both_engines):
    local, beam = both_engines
    expected, got = _records(local), _records(beam)
    assert got.keys() == expected.keys()
    for user, record in expected.items():
        gap = record.pop("time_gap", None), got[user].pop("time_gap", None)
        np.testing.assert_array_equal(*gap)  # NaN at the first
        assert got[user] == record, user


def test_token_features_are_byte_equal(both_engines):
    local, beam = both_engines
    names = OnDiskDataset(local).token_feature_names
    assert OnDiskDataset(beam).token_feature_names == names
    if not names:
        assert "interaction_tokens.json" not in os.listdir(beam)
        return
    text = _read(beam, "interaction_tokens.json", "rb")
    assert text == _read(local, "interaction_tokens.json", "rb")
    (device,) = json.loads(text)  # page: not in every file
    assert device["name"] == "device"
    # "" is no value, fax is too rare, kiosk is in test positions only.
    assert sorted(device["vocabulary"]) == ["app", "tv", "web"]
    assert 0 < device["coverage"] < 1


# --- item features ----------------------------------------------------------


def _item_table(files, file_format):
    """Attributes of four items in five (a token, a token list, a number)
    and of two items no user clicked (cold items)."""
    table = read_encoded(files, file_format).to_interactions()
    rows = {
        item: {
            "kind": f"k{k % 4}",
            "tags": tuple(f"t{(k + j) % 5}" for j in range(k % 3)),
            "size": float(k % 7),
        }
        for k, item in enumerate(sorted(set(table.items.tolist())))
        if k % 5
    }
    rows["cold-z"] = {"kind": "k9", "size": 1.5}
    rows["cold-y"] = {"tags": ("t1",)}
    kinds = {"kind": "token", "tags": "token_seq", "size": "float"}
    return ItemFeatureTable(kinds, rows, "items.item")


@pytest.fixture(scope="module", params=["sessions", "synthetic-filtered"])
def both_engines_with_item_features(request, tmp_path_factory):
    """(local folder, beam folder) prepared from the same files and item
    attributes. Filtered: items the k-core filter drops that have
    attributes join as cold items too."""
    write, file_format, options = CASES[request.param]
    folder = tmp_path_factory.mktemp(f"{request.param}-items")
    pattern = write(folder)
    files = sorted(str(p) for p in folder.glob(os.path.basename(pattern)))
    table = _item_table(files, file_format)
    # Tokens held by one training item only are out-of-vocabulary.
    items = ItemFeatureRequest(table, lambda *_: table.names(), min_count=2)
    local = _local_engine(
        files, file_format, options, str(folder / "local"), items
    )
    beam = prepare_with_beam(
        [pattern],
        str(folder / "beam"),
        options,
        file_format,
        num_shards=3,
        item_features=items,
    )
    return local, beam


def test_item_features_are_byte_equal(both_engines_with_item_features):
    # The feature vocabularies, the cold items (vocabulary.json), the
    # values, the statistics and the trained items.
    local, beam = both_engines_with_item_features
    for name in ("vocabulary.json", *ITEM_FEATURE_FILES):
        assert _read(beam, name, "rb") == _read(local, name, "rb"), name
    expected, got = OnDiskDataset(local), OnDiskDataset(beam)
    assert got.item_feature_names == ["kind", "tags", "size"]
    assert got.metadata["item_feature_names"] == got.item_feature_names
    assert got.vocabulary.items[-2:] == ["cold-z", "cold-y"]
    assert not got.trained_items[-2:].any()
    np.testing.assert_array_equal(
        got.statistics.item_counts, expected.statistics.item_counts
    )
    assert got.num_items == expected.num_items == len(got.trained_items)
    # The same files but for the shards (two local, three Beam).
    assert _other_files(beam) == _other_files(local)


def _other_files(folder):
    return sorted(f for f in os.listdir(folder) if not f.endswith("record"))


# --- bad input --------------------------------------------------------------


def test_glob_matching_nothing(tmp_path):
    pattern = str(tmp_path / "nothing-*.tsv")
    with pytest.raises(DataError, match="No input file matches .*nothing-"):
        prepare_with_beam([pattern], str(tmp_path / "out"), {"max_len": 3})
    assert not os.path.exists(tmp_path / "out")


def test_existing_output_is_not_overwritten(tmp_path):
    output = tmp_path / "out"
    output.mkdir()
    (output / "keep.txt").write_text("mine")
    path = _write_sessions(tmp_path)
    with pytest.raises(FileExistsError, match="--overwrite"):
        prepare_with_beam([path], str(output), {"max_len": 3})
    assert os.listdir(output) == ["keep.txt"]


def test_malformed_line_names_file_and_line(tmp_path):
    path = _write_sessions(tmp_path)
    with open(path, "a") as handle:
        handle.write("s9\tz\n")
    with pytest.raises(DataError) as raised:
        prepare_with_beam([path], str(tmp_path / "out"), {"max_len": 3})
    message = str(raised.value)
    assert message.startswith(f"{path}:17: expected 3 fields, found 2")
    assert "while running" not in message
    assert not os.path.exists(tmp_path / "out")
    assert [entry for entry in os.listdir(tmp_path)] == ["sessions.txt"]


def test_unsettled_filter_names_filter_rounds(tmp_path):
    path = _write_sessions(tmp_path)
    options = {"max_len": 3, "min_user_interactions": 2}
    options["min_item_interactions"] = 2
    with pytest.raises(DataError, match="filter_rounds=1 rounds: 1 items"):
        prepare_with_beam(
            [path], str(tmp_path / "out"), options, filter_rounds=1
        )
    assert os.listdir(tmp_path) == ["sessions.txt"]
