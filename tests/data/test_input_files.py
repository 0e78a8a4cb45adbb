"""How interaction files are read: shard order, gzip, duplicates, quotes.

The in-memory and local paths (``load_source``, ``read_encoded``) and the
Apache Beam engine (``prepare_with_beam``, marked slow) must read the same
interactions from the same files: each case checks both.
"""

import gzip
import os

import numpy as np
import pytest

from tfrec_tricks.data import datasets, loaders
from tfrec_tricks.data.encoded_interactions import duplicate_mask, read_encoded
from tfrec_tricks.data.user_sequences import user_sequences
from tfrec_tricks.data.write_prepared import write_prepared
from tfrec_tricks.errors import DataError

HEADER = "SessionId\tItemId\tTime\n"


def _sessions(session, count=4, start=0):
    """``count`` clicks of ``session`` on items ``i<start>``..., one a
    second."""
    return "".join(
        f"{session}\ti{start + k}\t{100 + k}\n" for k in range(count)
    )


def _write(path, text, compress=False):
    data = text.encode("utf-8")
    path.write_bytes(gzip.compress(data) if compress else data)
    return str(path)


def _table(pattern, file_format="auto", **kwargs):
    return datasets.load_source(
        "file", data_path=pattern, file_format=file_format, **kwargs
    )


# --- shard order ---------------------------------------------------------


def test_natural_sort_key_compares_digit_runs_as_numbers():
    names = ["part-10.tsv", "part-2.tsv", "part-1.tsv", "part-02.tsv", "a"]
    assert sorted(names, key=loaders.natural_sort_key) == [
        "a",
        "part-1.tsv",
        "part-02.tsv",
        "part-2.tsv",
        "part-10.tsv",
    ]


def _shards(tmp_path, count=11):
    """Shard k holds session s<k>: the table's user order is shard order."""
    folder = tmp_path / "logs"
    folder.mkdir()
    for k in range(1, count + 1):
        _write(folder / f"part-{k}.tsv", HEADER + _sessions(f"s{k}"))
    return str(folder / "part-*.tsv")


def test_glob_shards_are_read_in_natural_order(tmp_path):
    pattern = _shards(tmp_path)
    paths = datasets.file_paths(pattern)
    assert [os.path.basename(p) for p in paths] == [
        f"part-{k}.tsv" for k in range(1, 12)
    ]
    users = list(dict.fromkeys(_table(pattern).interactions.users))
    assert users == [f"s{k}" for k in range(1, 12)]


def test_beam_matches_in_the_same_order(tmp_path):
    from tfrec_tricks.data.beam_preparation import match_inputs

    pattern = _shards(tmp_path)
    assert match_inputs([pattern]) == datasets.file_paths(pattern)


# --- gzip -------------------------------------------------------------------


@pytest.mark.parametrize("name", ["clicks.tsv.gz", "clicks.tsv"])
def test_gzip_is_read_transparently(tmp_path, name):
    text = HEADER + _sessions("a") + _sessions("b", start=2)
    plain = _table(_write(tmp_path / "plain.tsv", text)).interactions
    packed = _table(_write(tmp_path / name, text, compress=True)).interactions
    for column in ("users", "items", "timestamps"):
        np.testing.assert_array_equal(
            getattr(packed, column), getattr(plain, column)
        )


def test_gzip_udata_format_is_guessed(tmp_path):
    path = _write(tmp_path / "u.data.gz", "1\t10\t3\t100\n", compress=True)
    assert loaders.guess_format(path) == "udata"


# --- duplicates -------------------------------------------------------------


def test_duplicate_mask_keeps_the_first_of_each_group():
    users = np.array([3, 1, 3, 1, 3])
    times = np.array([5.0, 5.0, 5.0, 6.0, 5.0])
    assert duplicate_mask([users, times]).tolist() == [
        False,
        False,
        True,
        False,
        True,
    ]


DUPLICATED = (
    HEADER
    + "1\ti1\t100\n"
    + "1\ti2\t101\n"
    + "1\ti2\t101\n"  # line 4: a copy of line 3
    + "1\ti2\t102\n"  # another time: a repeat, not a duplicate
    + "2\ti1\t100\n"
    + "1\ti2\t101\n"  # line 7: a copy of line 3 again
)


def test_duplicates_are_dropped_and_reported(tmp_path):
    path = _write(tmp_path / "clicks.tsv", DUPLICATED)
    source = _table(path)
    assert len(source.interactions) == 4
    assert source.duplicates.count == 2
    assert source.duplicates.first == f"{path}:4"
    assert source.duplicates.original == f"{path}:3"
    message = source.duplicates.message()
    assert "Duplicates: 2 rows repeat an earlier row exactly" in message
    assert f"the first {path}:4 (a copy of {path}:3); dropped" in message


def test_duplicates_are_kept_when_asked(tmp_path):
    path = _write(tmp_path / "clicks.tsv", DUPLICATED)
    source = _table(path, drop_duplicates=False)
    assert len(source.interactions) == 6
    assert source.duplicates.count == 2
    assert "kept (--drop-duplicates drops them)" in (
        source.duplicates.message()
    )


def test_duplicates_across_shards(tmp_path):
    folder = tmp_path / "logs"
    folder.mkdir()
    _write(folder / "part-1.tsv", HEADER + "1\ti1\t100\n1\ti2\t101\n")
    _write(folder / "part-2.tsv", HEADER + "1\ti2\t101\n")
    source = _table(str(folder / "part-*.tsv"))
    assert source.duplicates.first == f"{folder / 'part-2.tsv'}:2"
    assert source.duplicates.original == f"{folder / 'part-1.tsv'}:3"
    assert source.interactions.items.tolist() == ["i1", "i2"]


@pytest.mark.parametrize(
    "name, text",
    [
        # Another rating: not the same row.
        ("u.data", "1\t10\t3\t100\n1\t10\t4\t100\n"),
        # Another value in a column that is no id, time or number.
        (
            "x.inter",
            "user_id:token\titem_id:token\ttimestamp:float\tkind:token\n"
            "1\t10\t100\tview\n1\t10\t100\tcart\n",
        ),
        # No timestamps: identical lines are repeats in time order.
        ("seq.txt", "u1 i1\nu1 i1\n"),
    ],
)
def test_rows_that_differ_or_have_no_time_are_not_duplicates(
    tmp_path, name, text
):
    source = _table(_write(tmp_path / name, text))
    assert source.duplicates is None
    assert len(source.interactions) == 2


def test_a_rating_written_differently_is_the_same_value(tmp_path):
    path = _write(tmp_path / "u.data", "1\t10\t3\t100\n1\t10\t3.0\t100.0\n")
    assert _table(path).duplicates.count == 1


# --- quotes and empty ids ---------------------------------------------------


@pytest.mark.parametrize(
    "name, text, message",
    [
        ("u.data", '1\t"10"\t3\t100\n', "the item id '\"10\"' is in quotes"),
        ("u.data", '1\t10\t"3"\t100\n', "rating '\"3\"' is not a number"),
        ("u.data", "1\t\t3\t100\n", "u.data:1: the item id is empty"),
        ("u.data", "\t10\t3\t100\n", "u.data:1: the user id is empty"),
        ("u.data", "1\t  \t3\t100\n", "the item id is empty"),
        ("c.tsv", HEADER + "1\t\t100\n", "c.tsv:2: the ItemId is empty"),
        ("r.dat", "1::::3::100\n", "r.dat:1: the item id is empty"),
        (
            "x.inter",
            "session_id:token\titem_id:token\n \ti1\n",
            "x.inter:2: the session_id is empty",
        ),
    ],
)
def test_quoted_and_empty_fields_are_refused(tmp_path, name, text, message):
    path = _write(tmp_path / name, text)
    for read in (
        lambda: _table(path),
        lambda: read_encoded([path]),
        lambda: list(loaders.read_records(path)[1]),
    ):
        with pytest.raises(DataError) as error:
            read()
        assert message in str(error.value)


def test_quotes_inside_an_id_are_part_of_it(tmp_path):
    path = _write(tmp_path / "seq.txt", 'u1 12"tv\nu1 "a\n')
    assert _table(path).interactions.items.tolist() == ['12"tv', '"a']


# --- what a path is ---------------------------------------------------------


@pytest.mark.parametrize(
    "data, message",
    [
        ("utf16", "is UTF-16 encoded"),
        ("utf16-no-bom", "is UTF-16 encoded"),
        ("bzip2", "is bzip2-compressed"),
        ("xz", "is xz-compressed"),
        ("zip", "is zip-compressed"),
        ("gzip-truncated", "the gzip data is damaged or truncated"),
    ],
)
def test_files_that_are_not_utf8_text_are_named(tmp_path, data, message):
    import bz2
    import io
    import lzma
    import zipfile

    text = HEADER + _sessions("a")
    if data == "utf16":
        raw = text.encode("utf-16")
    elif data == "utf16-no-bom":
        raw = text.encode("utf-16-le")
    elif data == "bzip2":
        raw = bz2.compress(text.encode())
    elif data == "xz":
        raw = lzma.compress(text.encode())
    elif data == "zip":
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w") as archive:
            archive.writestr("clicks.tsv", text)
        raw = buffer.getvalue()
    else:
        raw = gzip.compress(text.encode())[:-12]
    path = tmp_path / "clicks.tsv"
    path.write_bytes(raw)
    with pytest.raises(DataError, match=message):
        _table(str(path))


def test_a_directory_is_named_as_one(tmp_path):
    with pytest.raises(DataError, match="is a directory"):
        _table(str(tmp_path))
    with pytest.raises(DataError, match="is a directory"):
        loaders.load_file(str(tmp_path))


# --- the Beam engine agrees ---------------------------------------------------


def _local(paths, options, output, drop):
    table = read_encoded(paths, "sessions", drop_duplicates=drop)
    sequences = user_sequences(
        table.users,
        table.items,
        table.timestamps,
        table.numeric,
        user_names=table.user_names,
        item_names=table.item_names,
        split=options["split"],
    )
    write_prepared(sequences, output, options, num_shards=1)
    return table.duplicates


@pytest.mark.slow
@pytest.mark.parametrize("drop", [True, False])
def test_beam_reads_the_same_interactions(tmp_path, drop):
    from tfrec_tricks.data.beam_preparation import prepare_with_beam
    from tfrec_tricks.data.on_disk_dataset import OnDiskDataset

    folder = tmp_path / "logs"
    folder.mkdir()
    # Shards 1..10, gzip and plain, with duplicates inside and across them.
    for k in range(1, 11):
        rows = _sessions(f"s{k}", start=k)
        text = HEADER + rows + _sessions(f"s{k}", 2, start=k)
        if k == 10:
            text += "s2\ti2\t100\n"  # a copy of part-2.tsv:2
        _write(folder / f"part-{k}.tsv", text, compress=k % 2 == 0)
    paths = datasets.file_paths(str(folder / "part-*.tsv"))
    options = {"max_len": 5, "split": "recbole", "drop_duplicates": drop}
    expected = _local(paths, options, str(tmp_path / "local"), drop)
    lines = []
    beam = prepare_with_beam(
        [str(folder / "part-*.tsv")],
        str(tmp_path / "beam"),
        options,
        "sessions",
        num_shards=2,
        report=lines.append,
    )
    assert lines == [expected.message()]
    assert expected.count == 21  # 2 per shard, and the one across shards
    assert expected.first == f"{paths[0]}:6"
    local = str(tmp_path / "local")
    with open(os.path.join(beam, "vocabulary.json"), "rb") as got:
        with open(os.path.join(local, "vocabulary.json"), "rb") as want:
            assert got.read() == want.read()
    for split in ("train", "validation", "test"):
        assert OnDiskDataset(beam).num_examples(split) == (
            OnDiskDataset(local).num_examples(split)
        )
