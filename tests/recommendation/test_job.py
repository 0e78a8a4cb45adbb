"""``recommend_frame`` and ``RecommendationJob``
(``tfrec_tricks.recommendation.job``) on a tiny trained run: every user's
list, the filters, new users' histories, and the same answers as the
exported SavedModel."""

import inspect

import numpy as np
import pandas as pd
import pytest
import tensorflow as tf

from tests.recommendation.recommend_helpers import (
    MAX_LEN,
    assert_same_lists,
    frame_lists,
    served_lists,
    synthetic_histories,
    train_tiny_run,
    user_histories,
    vocabulary,
)
from tfrec_tricks.errors import DataError
from tfrec_tricks.recommendation import (
    RecommendationJob,
    RecommendationOptions,
    recommend_frame,
)
from tfrec_tricks.recommendation.id_lists import IdList


def test_recommend_frames_parameters_are_the_options_fields():
    parameters = inspect.signature(recommend_frame).parameters
    assert list(parameters) == [
        "run_dir",
        "k",
        "users",
        "histories",
        "items",
        "exclude_items",
        "keep_seen",
        "batch_size",
        "new_item_slots",
        "new_item_boost",
    ]
    fields = RecommendationOptions()
    for name in list(parameters)[1:]:
        assert parameters[name].kind is inspect.Parameter.KEYWORD_ONLY
        assert parameters[name].default == getattr(fields, name)
    # recommend_frame passes them on by position.
    names = [
        f.name for f in RecommendationOptions.__dataclass_fields__.values()
    ]
    assert names[: len(parameters) - 1] == list(parameters)[1:]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return train_tiny_run(tmp_path_factory.mktemp("runs"))


@pytest.fixture(scope="module")
def loaded(run, tmp_path_factory):
    """The run exported for TF Serving and loaded with plain TensorFlow."""
    from tfrec_tricks.export import export_for_serving
    from tfrec_tricks.training.persistence import load_model

    base = tmp_path_factory.mktemp("served") / "tiny"
    path = export_for_serving(load_model(run), str(base), vocabulary(run))
    return tf.saved_model.load(path)


@pytest.fixture(scope="module")
def histories():
    return user_histories(synthetic_histories())


@pytest.fixture(scope="module")
def lists(run):
    return recommend_frame(run, k=10)


def _seen(histories):
    return {user: set(items) for user, (items, _) in histories.items()}


@pytest.mark.slow
def test_every_user_gets_k_items_never_one_seen(lists, histories):
    assert lists.columns.tolist() == ["user_id", "rank", "item_id", "score"]
    assert lists["user_id"].unique().tolist() == list(histories)
    assert (lists.groupby("user_id").size() == 10).all()
    assert (lists.groupby("user_id")["item_id"].nunique() == 10).all()
    seen = _seen(histories)
    assert not any(
        item in seen[user] for user, item in zip(lists.user_id, lists.item_id)
    )


@pytest.mark.slow
def test_the_lists_are_the_saved_models(run, lists, histories, loaded):
    expected = served_lists(
        loaded, vocabulary(run), histories, _seen(histories), 10, MAX_LEN
    )
    assert_same_lists(frame_lists(lists), expected)


@pytest.mark.slow
def test_keep_seen_gives_what_serving_default_serves(run, histories, loaded):
    kept = frame_lists(recommend_frame(run, k=10, keep_seen=True))
    serve = loaded.signatures["serving_default"]
    for user in ["u1", "u17", "u60"]:
        items, gaps = histories[user]
        out = serve(
            history=tf.constant([items[-MAX_LEN:]]),
            time_gap=tf.constant([gaps[-MAX_LEN:]], tf.float32),
        )
        served = out["item_ids"].numpy()[0].astype(str).tolist()
        assert [item for item, _ in kept[user]] == served
        np.testing.assert_allclose(
            [s for _, s in kept[user]], out["scores"].numpy()[0], atol=1e-5
        )


@pytest.mark.slow
def test_allow_and_deny_lists_hold(run, histories, loaded):
    allowed = [f"i{i}" for i in range(40, 0, -3)]
    denied = ["i4", "i7", "i40"]
    frame = recommend_frame(run, k=4, items=allowed, exclude_items=denied)
    assert set(frame["item_id"]) <= set(allowed) - set(denied)
    seen = _seen(histories)
    excluded = {user: seen[user] | set(denied) for user in seen}
    items = vocabulary(run)
    expected = served_lists(loaded, items, histories, excluded, 40, MAX_LEN)
    expected = {
        user: [(i, s) for i, s in pairs if i in allowed][:4]
        for user, pairs in expected.items()
    }
    got = frame_lists(frame)
    expected = {user: pairs for user, pairs in expected.items() if pairs}
    assert_same_lists(got, expected)
    denied_only = recommend_frame(run, k=10, exclude_items=denied)
    assert not set(denied_only["item_id"]) & set(denied)
    assert (denied_only.groupby("user_id").size() == 10).all()


@pytest.mark.slow
def test_users_and_batch_size_leave_the_lists_as_they_are(run, lists):
    wanted = IdList(["u9", "u2", "u9"], "users.txt", [1, 2, 3])
    frame = recommend_frame(run, k=10, users=wanted, batch_size=1)
    expected = lists[lists["user_id"].isin(["u2", "u9"])]
    pd.testing.assert_frame_equal(frame, expected.reset_index(drop=True))
    small = recommend_frame(run, k=10, batch_size=7)
    pd.testing.assert_frame_equal(small, lists)


@pytest.mark.slow
def test_new_users_histories(run, loaded):
    frame = pd.DataFrame(
        {
            "user_id": ["new1", "new1", "new2", "new1", "new2", "new1"],
            "item_id": ["i3", "i5", "i9", "not-an-item", "i3", "i8"],
            "timestamp": [100.0, 400.0, 50.0, 500.0, 70.0, 900.0],
        }
    )
    got = recommend_frame(run, k=5, histories=frame)
    assert got["user_id"].unique().tolist() == ["new1", "new2"]
    expected = served_lists(
        loaded,
        vocabulary(run),
        user_histories(frame),
        {"new1": {"i3", "i5", "i8"}, "new2": {"i3", "i9"}},
        5,
        MAX_LEN,
    )
    assert_same_lists(frame_lists(got), expected)
    only = recommend_frame(run, k=5, histories=frame, users=["new2"])
    assert only["user_id"].unique().tolist() == ["new2"]


@pytest.mark.slow
def test_the_runs_own_data_as_histories_gives_the_same_lists(run, lists):
    frame = recommend_frame(run, k=10, histories=synthetic_histories())
    pd.testing.assert_frame_equal(frame, lists)


@pytest.mark.slow
def test_job_counts_and_reports_its_batches(run):
    options = RecommendationOptions(k=3, users=["u3", "u4", "u5"], batch_size=2)
    job = RecommendationJob(run, options)
    assert job.num_users == 3
    seen = []
    frames = list(job.batches(progress=seen.append))
    assert seen == [2, 1] and [len(f) for f in frames] == [6, 3]
    assert job.describe() == "top 3, seen items excluded"


@pytest.mark.slow
@pytest.mark.parametrize(
    "options, error, fragment",
    [
        (
            {"users": IdList(["u1", "someone"], "vip.txt", [1, 4])},
            DataError,
            "vip.txt:4: user 'someone' is not in the run's data (60 users "
            "after its filters). Received: user 'someone'",
        ),
        (
            {"items": ["i1", "i999"]},
            DataError,
            "items[1]: item 'i999' is not in the run's catalogue (40 items)",
        ),
        (
            {"exclude_items": IdList(["[PAD]"], "deny.txt", [3])},
            DataError,
            "deny.txt:3: item '[PAD]' is not in the run's catalogue",
        ),
        ({"k": 41}, ValueError, "at most the catalogue's 40 items"),
        ({"k": 0}, ValueError, "`k` must be a positive int. Received: k=0"),
        ({"k": True}, ValueError, "Received: k=True"),
        ({"batch_size": 0}, ValueError, "Received: batch_size=0"),
        (
            {"histories": pd.DataFrame({"user_id": ["a"], "item_id": ["i1"]})},
            DataError,
            "histories has no ['time_gap'] (time_gap needs a timestamp "
            "column; its columns are user_id, item_id)",
        ),
        (
            {
                "histories": pd.DataFrame(
                    {"user_id": ["a"], "item_id": ["i1"], "timestamp": [1.0]}
                ),
                "users": ["u1"],
            },
            DataError,
            "users[0]: user 'u1' is not in histories (1 users)",
        ),
    ],
)
def test_refusals_name_what_was_received(run, options, error, fragment):
    with pytest.raises(error) as raised:
        recommend_frame(run, **options)
    assert fragment in str(raised.value)
