"""Recommendation files (``tfrec_tricks.recommendation.writers``): the
three formats read back, the refusals, and nothing left behind by an
error or Ctrl-C."""

import json
import os

import numpy as np
import pandas as pd
import pytest

from tests.run_helpers import snapshot
from tfrec_tricks import ownership
from tfrec_tricks.errors import OutputError
from tfrec_tricks.recommendation import writers
from tfrec_tricks.recommendation.writers import (
    check_output,
    output_format,
    staged_output,
)


def table(users, start=0):
    """Two rows per user; ids with a comma, a quote and non-ASCII."""
    rows = []
    for index, user in enumerate(users):
        for rank in (1, 2):
            score = np.float32(1.0 / (start + index + rank + 0.3))
            rows.append((user, rank, f'é,"{index}-{rank}', score))
    frame = pd.DataFrame(rows, columns=["user_id", "rank", "item_id", "score"])
    return frame.astype({"rank": np.int32, "score": np.float32})


def read_back(path, file_format):
    if file_format == "csv":
        return pd.read_csv(path, dtype={"user_id": str, "item_id": str})
    if file_format == "jsonl":
        with open(path, encoding="utf-8") as handle:
            records = [json.loads(line) for line in handle]
        return pd.DataFrame.from_records(records)
    return pd.read_parquet(path)


@pytest.mark.parametrize("file_format", ["csv", "jsonl", "parquet"])
def test_each_format_reads_back_row_for_row(tmp_path, file_format):
    parts = [table(["007", "u 2"]), table([]), table(["x"], start=5)]
    path = tmp_path / "out" / f"recs.{file_format}"
    with staged_output(str(path), file_format) as writer:
        for part in parts:
            writer.write(part)
    assert writer.rows == 6
    expected = pd.concat(parts, ignore_index=True)
    got = read_back(path, file_format)
    assert got.columns.tolist() == ["user_id", "rank", "item_id", "score"]
    assert got["user_id"].tolist() == expected["user_id"].tolist()
    assert got["item_id"].tolist() == expected["item_id"].tolist()
    assert got["rank"].tolist() == expected["rank"].tolist()
    # Each format keeps the float32 score exactly.
    np.testing.assert_array_equal(
        got["score"].to_numpy(np.float32), expected["score"].to_numpy()
    )
    assert sorted(os.listdir(path.parent)) == [path.name]


def test_parquet_types_and_row_groups(tmp_path, monkeypatch):
    import pyarrow.parquet as pq

    monkeypatch.setattr(writers, "ROW_GROUP_ROWS", 5)
    path = tmp_path / "recs.parquet"
    with staged_output(str(path), "parquet") as writer:
        for start in range(4):
            writer.write(table(["a", "b"], start))
    parquet = pq.ParquetFile(path)
    assert [str(t) for t in parquet.schema_arrow.types] == [
        "string",
        "int32",
        "string",
        "float",
    ]
    assert parquet.metadata.num_rows == 16
    # Flushed at 8 rows (>= 5) and 16.
    assert parquet.metadata.num_row_groups == 2


@pytest.mark.parametrize(
    "path, given, expected",
    [
        ("recs.csv", None, "csv"),
        ("a/recs.JSONL", None, "jsonl"),
        ("recs.ndjson", None, "jsonl"),
        ("recs.parquet", None, "parquet"),
        ("recs.txt", "csv", "csv"),
        ("recs.csv", "parquet", "parquet"),
    ],
)
def test_output_format(path, given, expected):
    assert output_format(path, given) == expected


def test_output_format_refuses_an_unknown_ending():
    with pytest.raises(ValueError, match="Received: ending '.tsv'"):
        output_format("recs.tsv")
    with pytest.raises(ValueError, match="Received: 'xml'"):
        output_format("recs.csv", "xml")


def test_check_output_refusals(tmp_path):
    (tmp_path / "recs.csv").write_text("mine")
    with pytest.raises(OutputError, match="'.*recs.csv' exists \\(a file\\)"):
        check_output(str(tmp_path / "recs.csv"))
    with pytest.raises(OutputError, match="exists \\(a folder\\)"):
        check_output(str(tmp_path))
    with pytest.raises(OutputError, match="lies inside an input"):
        check_output(
            str(tmp_path / "run" / "recs.csv"), [str(tmp_path / "run")]
        )
    owned = tmp_path / "prepared"
    ownership.start_record(str(owned), "prepared dataset")
    with pytest.raises(OutputError, match="a prepared dataset tfrec-tricks"):
        check_output(str(owned / "deep" / "recs.csv"))
    check_output(str(tmp_path / "new" / "recs.csv"), [str(tmp_path / "run")])


@pytest.mark.parametrize("error", [RuntimeError, KeyboardInterrupt])
@pytest.mark.parametrize("file_format", ["csv", "parquet"])
def test_an_error_midway_leaves_nothing(tmp_path, error, file_format):
    (tmp_path / "other.txt").write_text("kept")
    before = snapshot(tmp_path)
    path = tmp_path / "new" / f"recs.{file_format}"
    with pytest.raises(error):
        with staged_output(str(path), file_format) as writer:
            writer.write(table(["a"]))
            staging = os.path.dirname(writer.path)
            assert os.path.isfile(writer.path)
            assert ownership.staging_target(staging) == str(path)
            raise error("midway")
    assert snapshot(tmp_path) == before


def test_a_file_that_appears_meanwhile_is_not_replaced(tmp_path):
    path = tmp_path / "recs.csv"
    with pytest.raises(OutputError, match="appeared while"):
        with staged_output(str(path), "csv") as writer:
            writer.write(table(["a"]))
            path.write_text("someone else's")
    assert path.read_text() == "someone else's"
    assert sorted(os.listdir(tmp_path)) == ["recs.csv"]


def test_a_killed_writers_staging_folder_is_removed_next_time(tmp_path):
    path = tmp_path / "recs.csv"
    leftover = tmp_path / ".recs.csv.abc.tmp"
    leftover.mkdir()
    ownership.mark_staging(str(leftover), str(path))
    (leftover / "recs.csv").write_text("half")
    foreign = tmp_path / ".recs.csv.mine.tmp"
    foreign.mkdir()
    with staged_output(str(path), "csv") as writer:
        writer.write(table(["a"]))
    assert sorted(os.listdir(tmp_path)) == [foreign.name, "recs.csv"]
