"""The Beam preparation's input files: matched in order, read into rows."""

import os

import apache_beam as beam
import pytest
from apache_beam.testing.util import assert_that, equal_to

from tfrec_tricks.data.beam.inputs import ReadFile, match_inputs, read_files
from tfrec_tricks.data.beam.runner import marked_message
from tfrec_tricks.errors import DataError

UDATA = "196\t242\t3\t881250949\n186\t302\t3\t891717742\n"


def test_patterns_in_order_each_in_natural_order(tmp_path):
    for name in ("b-10.tsv", "b-2.tsv", "a.tsv"):
        (tmp_path / name).write_text(UDATA)
    paths = match_inputs([str(tmp_path / "b-*.tsv"), str(tmp_path / "a.tsv")])
    assert [os.path.basename(p) for p in paths] == [
        "b-2.tsv",
        "b-10.tsv",
        "a.tsv",
    ]


def test_an_existing_path_is_read_literally(tmp_path):
    path = tmp_path / "clicks[1].tsv"
    path.write_text(UDATA)
    assert match_inputs([str(path)]) == [str(path)]


@pytest.mark.parametrize(
    "inputs, message",
    [
        ([], "at least one input file"),
        (["nothing-*.tsv"], "No input file matches .*nothing-"),
    ],
)
def test_no_file(tmp_path, inputs, message):
    inputs = [str(tmp_path / pattern) for pattern in inputs]
    with pytest.raises(DataError, match=message):
        match_inputs(inputs)


def test_a_directory_is_refused(tmp_path):
    (tmp_path / "logs").mkdir()
    with pytest.raises(DataError, match="is a directory"):
        match_inputs([str(tmp_path / "logs")])


def test_read_file_gives_columns_then_rows(tmp_path):
    path = tmp_path / "u.data"
    path.write_text(UDATA)
    outputs = list(ReadFile("udata").process((3, str(path))))
    columns = outputs[0]
    assert columns.tag == ReadFile.COLUMNS
    assert columns.value == (3, True, ("rating",), ())
    assert outputs[1:] == [
        (3, 1, "196", "242", 881250949.0, (3.0,), (), ()),
        (3, 2, "186", "302", 891717742.0, (3.0,), (), ()),
    ]


def test_read_file_keeps_the_token_columns(tmp_path):
    path = tmp_path / "shop.inter"
    path.write_text(
        "user_id:token\titem_id:token\ttimestamp:float\tdevice:token\n"
        "u1\ti1\t5\tweb\nu1\ti2\t6\t\n"
    )
    outputs = list(ReadFile("recbole").process((0, str(path))))
    assert outputs[0].value == (0, True, (), ("device",))
    assert [row[-1] for row in outputs[1:]] == [("web",), ("",)]


def test_read_file_marks_errors_with_the_given_path(tmp_path):
    copy = tmp_path / "copy.data"
    copy.write_text(UDATA + "1\t2\n")
    read = ReadFile("udata", copies={"<pipe>": str(copy)})
    with pytest.raises(DataError) as raised:
        list(read.process((0, "<pipe>")))
    message = marked_message(raised.value)
    assert message is not None and message.startswith("<pipe>:3: ")


@pytest.mark.slow
def test_read_files_on_workers(tmp_path):
    paths = []
    for k in range(2):
        (tmp_path / f"{k}.data").write_text(UDATA)
        paths.append(str(tmp_path / f"{k}.data"))
    with beam.Pipeline() as pipeline:
        rows, _, count = read_files(pipeline, paths, "udata")
        places = rows | beam.Map(lambda row: row[:2])
        assert_that(places, equal_to([(0, 1), (0, 2), (1, 1), (1, 2)]))
        assert_that(count, equal_to([4]), label="Count")
