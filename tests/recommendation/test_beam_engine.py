"""The Beam engine (``tfrec_tricks.recommendation.beam_engine``) on the
DirectRunner: the local engine's rows on a held-back sample of users, with
every filter, new users' histories and a run trained on a prepared
dataset; a folder of shards published whole, nothing left by an error,
an existing output refused."""

import os
import shutil
import tempfile

import numpy as np
import pandas as pd
import pytest
import tensorflow as tf

from tests.recommendation.recommend_helpers import (
    TINY_DATA,
    synthetic_histories,
    train_tiny_run,
    vocabulary,
)
from tests.run_helpers import snapshot
from tfrec_tricks import ownership
from tfrec_tricks.errors import OutputError
from tfrec_tricks.recommendation import (
    RecommendationJob,
    RecommendationOptions,
    beam_engine,
    recommend_frame,
    writers,
)
from tfrec_tricks.recommendation.beam_engine import (
    PreparedUsers,
    frame_text,
    recommend_with_beam,
    shard_pattern,
)
from tfrec_tricks.recommendation.beam_model_handler import (
    RecommendationModelHandler,
)
from tfrec_tricks.recommendation.user_histories import (
    PreparedHistories,
    item_remap,
)

FRAME = pd.DataFrame(
    {
        "user_id": ["1", 'say "hi", ok', "ü"],
        "rank": np.int32([1, 2, 1]),
        "item_id": ["02", "a\tb", "x,y"],
        "score": np.float32([0.1, -1e9, 2.2023613]),
    }
)


@pytest.mark.parametrize("file_format", ["csv", "jsonl"])
def test_frame_text_is_what_the_local_writer_writes(tmp_path, file_format):
    path = tmp_path / f"r.{file_format}"
    with writers.staged_output(str(path), file_format) as writer:
        writer.write(FRAME)
    header = "user_id,rank,item_id,score\n" if file_format == "csv" else ""
    text = frame_text(FRAME, file_format)
    assert path.read_text(encoding="utf-8") == header + text + "\n"


def test_arrow_tables_have_the_local_parquet_schema(tmp_path):
    import pyarrow.parquet as pq

    path = tmp_path / "r.parquet"
    with writers.staged_output(str(path), "parquet") as writer:
        writer.write(FRAME)
    table = beam_engine.arrow_table(FRAME)
    assert table.schema.equals(pq.read_schema(path), check_metadata=False)
    assert table.equals(pq.read_table(path))


def test_shard_names():
    pattern = shard_pattern("jsonl")
    assert pattern.fullmatch("part-00000-of-00002.jsonl")
    assert not pattern.fullmatch("part-00000-of-00002.csv")
    assert not pattern.fullmatch("beam-temp-part-123")


# --- pipelines ----------------------------------------------------------


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return train_tiny_run(tmp_path_factory.mktemp("runs"))


@pytest.fixture(scope="module")
def saved_model(run, tmp_path_factory):
    """The run exported as `tfrec-tricks export` exports it, k=8."""
    from tfrec_tricks.export import export_for_serving
    from tfrec_tricks.export.model_identity import ModelIdentity
    from tfrec_tricks.training.persistence import load_model
    from tfrec_tricks.training.run_directory import check_finished_run

    root = tmp_path_factory.mktemp("served")
    identity = ModelIdentity.of_run(run, check_finished_run(run))
    return export_for_serving(
        load_model(run),
        str(root / "tiny"),
        vocabulary(run),
        k=8,
        identity=identity,
    )


# A held-back sample: 25 of the 60 users, drawn once.
SAMPLE = sorted(
    f"u{u}" for u in np.random.default_rng(7).choice(60, 25, False) + 1
)


def read_shards(folder, files, file_format):
    frames = []
    for name in files:
        path = os.path.join(folder, name)
        if file_format == "csv":
            frame = pd.read_csv(path, dtype={"user_id": str, "item_id": str})
        elif file_format == "jsonl":
            if not os.path.getsize(path):
                continue
            frame = pd.read_json(
                path, lines=True, dtype={"user_id": str, "item_id": str}
            )
        else:
            frame = pd.read_parquet(path)
        assert frame.columns.tolist() == ["user_id", "rank", "item_id", "score"]
        if len(frame):
            frames.append(frame)
    return pd.concat(frames, ignore_index=True)


def assert_same_rows(got, expected):
    """The same (user, rank, item) rows, scores within 1e-5."""
    order = ["user_id", "rank"]
    got = got.sort_values(order, ignore_index=True)
    expected = expected.sort_values(order, ignore_index=True)
    assert len(got) == len(expected) > 0
    for column in ("user_id", "rank", "item_id"):
        assert got[column].astype(str).tolist() == (
            expected[column].astype(str).tolist()
        ), column
    np.testing.assert_allclose(got["score"], expected["score"], atol=1e-5)


def beam_rows(run, tmp_path, file_format="csv", **kwargs):
    """The Beam engine's rows of a job, and what it returned."""
    options = {
        key: kwargs.pop(key)
        for key in list(kwargs)
        if key in RecommendationOptions.__dataclass_fields__
    }
    job = RecommendationJob(run, RecommendationOptions(**options))
    output = str(tmp_path / f"recs.{file_format}")
    written = recommend_with_beam(job, output, file_format, **kwargs)
    return read_shards(output, written.files, file_format), written


CASES = {
    "sample": ("csv", dict(k=5, users=SAMPLE, batch_size=4)),
    "sample, allowed and denied": (
        "jsonl",
        dict(
            k=4,
            users=SAMPLE,
            items=[f"i{i}" for i in range(1, 16)],
            exclude_items=["i3", "i5"],
            batch_size=7,
        ),
    ),
    "all, seen kept, denied": (
        "parquet",
        dict(k=6, keep_seen=True, exclude_items=["i1"]),
    ),
}


@pytest.mark.slow
@pytest.mark.parametrize("case", list(CASES))
def test_the_local_engines_rows(run, saved_model, tmp_path, case):
    file_format, options = CASES[case]
    got, written = beam_rows(
        run, tmp_path, file_format, saved_model=saved_model, **options
    )
    options.pop("batch_size", None)
    expected = recommend_frame(run, **options)
    assert_same_rows(got, expected)
    assert written.rows == len(expected)


@pytest.mark.slow
def test_new_users_histories_through_a_temporary_export(
    run, tmp_path, monkeypatch
):
    # The run's own data as new histories, and a user of unknown items.
    histories = pd.concat(
        [
            synthetic_histories(),
            pd.DataFrame(
                {"user_id": ["new"], "item_id": ["nope"], "timestamp": [5.0]}
            ),
        ],
        ignore_index=True,
    )
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temporary))
    exported = []

    def export(model, base_path, *args, **kwargs):
        exported.append(base_path)
        return export_for_serving(model, base_path, *args, **kwargs)

    export_for_serving = beam_engine.export_for_serving
    monkeypatch.setattr(beam_engine, "export_for_serving", export)
    got, written = beam_rows(
        run, tmp_path, histories=histories, users=SAMPLE + ["new"], k=3
    )
    expected = recommend_frame(
        run, histories=histories, users=SAMPLE + ["new"], k=3
    )
    assert_same_rows(got, expected)
    assert "new" in set(got["user_id"])
    # The run was exported into a temporary folder, since removed.
    (base_path,) = exported
    assert base_path.startswith(str(temporary / "tfrec-tricks-recommend-"))
    assert not os.path.exists(os.path.dirname(base_path))


@pytest.mark.slow
def test_a_prepared_runs_shards_are_read_by_the_workers(tmp_path):
    from tfrec_tricks.training.prepare_dataset import prepare_dataset
    from tfrec_tricks.training.run_training import train
    from tfrec_tricks.training.train_config import TrainConfig

    config = dict(
        **TINY_DATA,
        max_len=6,
        epochs=1,
        output_dir=str(tmp_path / "runs"),
        model={"embedding_dim": 8, "features": ("time_gap",)},
    )
    prepared = prepare_dataset(
        TrainConfig(**config), str(tmp_path / "prepared"), verbose=False
    )
    run = train(TrainConfig(**config, prepared=prepared), verbose=0).run_dir
    job = RecommendationJob(run, RecommendationOptions(k=4, users=SAMPLE))
    assert isinstance(job.histories, PreparedHistories)

    # The DoFn reads what PreparedHistories reads.
    parse = PreparedUsers(
        job.histories.user_names,
        item_remap(job.histories.dataset.vocabulary.items, vocabulary(run)),
        ["time_gap"],
        set(SAMPLE),
    )
    records = tf.data.TFRecordDataset(job.histories.dataset.files)
    requests = {
        request.user_id: request
        for record in records.as_numpy_iterator()
        for request in parse.process(record)
    }
    assert sorted(requests) == SAMPLE
    for batch in job.histories.batches(100, SAMPLE, ["time_gap"]):
        for row, user in enumerate(batch.users):
            np.testing.assert_array_equal(
                requests[user].item_ids, batch.item_ids[row]
            )
            np.testing.assert_array_equal(
                requests[user].features["time_gap"],
                batch.features["time_gap"][row],
            )
            assert requests[user].item_ids.dtype == batch.item_ids[row].dtype

    output = str(tmp_path / "recs.csv")
    written = recommend_with_beam(job, output, "csv", num_shards=3)
    got = read_shards(output, written.files, "csv")
    assert_same_rows(got, recommend_frame(run, k=4, users=SAMPLE))


@pytest.mark.slow
def test_a_folder_of_shards_published_whole(run, saved_model, tmp_path):
    job = RecommendationJob(run, RecommendationOptions(k=2, users=["u3"]))
    output = tmp_path / "out" / "recs.csv"
    written = recommend_with_beam(
        job, str(output), "csv", saved_model=saved_model, num_shards=3
    )
    names = [f"part-0000{i}-of-00003.csv" for i in range(3)]
    assert written.files == names and written.rows == 2
    assert written.path == str(output)
    assert sorted(os.listdir(output)) == [ownership.RECORD_FILE, *names]
    assert ownership.record_kind(str(output)) == "folder of recommendations"
    texts = [(output / name).read_text() for name in names]
    # Every shard has its header; the user's rows are in one shard.
    assert all(t.startswith("user_id,rank,item_id,score\n") for t in texts)
    assert sorted(len(t.splitlines()) for t in texts) == [1, 1, 3]
    # Nothing else beside it: no staging folder, no lock.
    assert sorted(os.listdir(tmp_path / "out")) == ["recs.csv"]

    # An existing output is refused, and left as it is.
    before = snapshot(tmp_path)
    with pytest.raises(OutputError, match="recs.csv' exists \\(a folder\\)"):
        recommend_with_beam(job, str(output), "csv", saved_model=saved_model)
    assert snapshot(tmp_path) == before


@pytest.mark.slow
def test_refusals_come_before_anything_is_written(run, saved_model, tmp_path):
    from tfrec_tricks.export.model_identity import IDENTITY_FILE

    job = RecommendationJob(run, RecommendationOptions(k=9))
    # The export as an older tfrec-tricks wrote it: no record of its model.
    unrecorded = str(tmp_path / "old" / "1")
    shutil.copytree(saved_model, unrecorded)
    os.remove(os.path.join(unrecorded, IDENTITY_FILE))
    before = snapshot(tmp_path)
    output = str(tmp_path / "recs.csv")
    cases = [
        (dict(file_format="xml"), "must be one of"),
        (dict(num_shards=0), "Received: num_shards=0"),
        (dict(saved_model=saved_model), "returns at most 8 items"),
        (dict(saved_model=run), "is not a SavedModel folder"),
        (dict(saved_model=unrecorded), "does not say which model it was"),
    ]
    for change, fragment in cases:
        arguments = {"file_format": "csv", **change}
        with pytest.raises(ValueError, match=fragment):
            recommend_with_beam(job, output, **arguments)
    assert snapshot(tmp_path) == before


@pytest.mark.slow
def test_an_error_in_the_pipeline_leaves_nothing(
    run, saved_model, tmp_path, monkeypatch
):
    def failing(self, batch, model, inference_args=None):
        raise RuntimeError("worker on fire")

    monkeypatch.setattr(RecommendationModelHandler, "run_inference", failing)
    job = RecommendationJob(run, RecommendationOptions(k=2, users=SAMPLE))
    (tmp_path / "out").mkdir()
    before = snapshot(tmp_path)
    with pytest.raises(Exception, match="worker on fire"):
        recommend_with_beam(
            job, str(tmp_path / "out" / "r.csv"), "csv", saved_model=saved_model
        )
    assert snapshot(tmp_path) == before
    # Once the cause is gone, the same call writes the folder.
    monkeypatch.undo()
    written = recommend_with_beam(
        job, str(tmp_path / "out" / "r.csv"), "csv", saved_model=saved_model
    )
    assert written.rows == 2 * len(SAMPLE)
    with pytest.raises(OutputError, match="exists"):
        writers.check_output(written.path)
