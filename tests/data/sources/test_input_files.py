"""How interaction files are read: shard order, gzip, quotes, encodings.

The in-memory and local paths (``load_source``, ``read_encoded``) and the
Apache Beam engine (``prepare_with_beam``, marked slow) must read the same
interactions from the same files: each case checks both.
"""

import gzip
import os

import numpy as np
import pytest
from input_file_helpers import (
    HEADER,
    load_table,
    sessions,
    shard_files,
    write_file,
)

from tfrec_tricks.data.prepared.writer import write_prepared
from tfrec_tricks.data.sources import loaders, named_sources
from tfrec_tricks.data.sources.encoded_interactions import read_encoded
from tfrec_tricks.data.user_sequences import user_sequences
from tfrec_tricks.errors import DataError

# --- shard order ---------------------------------------------------------


def test_beam_matches_in_the_same_order(tmp_path):
    from tfrec_tricks.data.beam.inputs import match_inputs

    pattern = shard_files(tmp_path)
    assert match_inputs([pattern]) == named_sources.file_paths(pattern)


# --- gzip -------------------------------------------------------------------


@pytest.mark.parametrize("name", ["clicks.tsv.gz", "clicks.tsv"])
def test_gzip_is_read_transparently(tmp_path, name):
    text = HEADER + sessions("a") + sessions("b", start=2)
    plain = load_table(write_file(tmp_path / "plain.tsv", text)).interactions
    packed_path = write_file(tmp_path / name, text, compress=True)
    packed = load_table(packed_path).interactions
    for column in ("users", "items", "timestamps"):
        np.testing.assert_array_equal(
            getattr(packed, column), getattr(plain, column)
        )


def test_gzip_udata_format_is_guessed(tmp_path):
    path = write_file(tmp_path / "u.data.gz", "1\t10\t3\t100\n", compress=True)
    assert loaders.guess_format(path) == "udata"


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
    path = write_file(tmp_path / name, text)
    for read in (
        lambda: load_table(path),
        lambda: read_encoded([path]),
        lambda: list(loaders.read_records(path)[1]),
    ):
        with pytest.raises(DataError) as error:
            read()
        assert message in str(error.value)


def test_quotes_inside_an_id_are_part_of_it(tmp_path):
    path = write_file(tmp_path / "seq.txt", 'u1 12"tv\nu1 "a\n')
    assert load_table(path).interactions.items.tolist() == ['12"tv', '"a']


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

    text = HEADER + sessions("a")
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
        load_table(str(path))


def test_a_directory_is_named_as_one(tmp_path):
    with pytest.raises(DataError, match="is a directory"):
        load_table(str(tmp_path))
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
    from tfrec_tricks.data.beam.prepare_with_beam import prepare_with_beam
    from tfrec_tricks.data.prepared.on_disk_dataset import OnDiskDataset

    folder = tmp_path / "logs"
    folder.mkdir()
    # Shards 1..10, gzip and plain, with duplicates inside and across them.
    for k in range(1, 11):
        rows = sessions(f"s{k}", start=k)
        text = HEADER + rows + sessions(f"s{k}", 2, start=k)
        if k == 10:
            text += "s2\ti2\t100\n"  # a copy of part-2.tsv:2
        write_file(folder / f"part-{k}.tsv", text, compress=k % 2 == 0)
    paths = named_sources.file_paths(str(folder / "part-*.tsv"))
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
