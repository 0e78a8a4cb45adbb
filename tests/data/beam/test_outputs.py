"""The driver reads back what the workers wrote: shards and side files."""

import json

import apache_beam as beam
import pytest
import tensorflow as tf

from tfrec_tricks.data.beam.outputs import (
    TRAINED_ITEMS,
    check_shards,
    count_records,
    read_side_file,
    write_trained_items,
)


def test_count_records_reads_the_length_headers(tmp_path):
    path = str(tmp_path / "x.tfrecord")
    with tf.io.TFRecordWriter(path) as writer:
        for record in (b"", b"a" * 300, b"bc"):
            writer.write(record)
    assert count_records(path) == 3


def test_check_shards_creates_the_missing_ones(tmp_path):
    (tmp_path / "sequences-00001-of-00003.tfrecord").write_bytes(b"x")
    names = check_shards(str(tmp_path), 3)
    assert names == [f"sequences-0000{i}-of-00003.tfrecord" for i in range(3)]
    assert sorted(p.name for p in tmp_path.iterdir()) == names
    assert (tmp_path / names[0]).read_bytes() == b""


def test_check_shards_refuses_other_names(tmp_path):
    (tmp_path / "sequences-00000-of-00002.tfrecord").write_bytes(b"")
    with pytest.raises(RuntimeError, match="Beam wrote shards named"):
        check_shards(str(tmp_path), 3)


def test_read_side_file(tmp_path):
    (tmp_path / "summary.json").write_text('{"rows": 2}')
    assert read_side_file(str(tmp_path), "summary.json") == '{"rows": 2}'


@pytest.mark.slow
def test_the_trained_items_are_written_as_a_json_list(tmp_path):
    with beam.Pipeline() as pipeline:
        one = pipeline | "One" >> beam.Create([None])
        trained = pipeline | "Trained" >> beam.Create([[1, 3, 4]])
        write_trained_items(one, str(tmp_path), trained)
    text = read_side_file(str(tmp_path), TRAINED_ITEMS)
    assert json.loads(text) == [1, 3, 4]
