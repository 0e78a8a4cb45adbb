"""The default search space: its rows, their order and their choices."""

import pytest

from tfrec_tricks.heads.registry import tied_softmax_heads
from tfrec_tricks.models.config import HEADS
from tfrec_tricks.tuning import search_space

# The rows of ``default_space``: (name, parent) in declaration order,
# computed once from the space before it was split into groups.
DEFAULT_SPACE_ROWS = [
    ("encoder", None),
    ("embedding_dim", None),
    ("num_layers", None),
    ("num_heads", "encoder"),
    ("dropout", None),
    ("learning_rate", None),
    ("batch_size", None),
    ("tie_embeddings", None),
    ("sse", None),
    ("sse_item_probability", "sse"),
    ("sse_label_probability", "sse"),
    ("features", None),
    ("soft_one_hot_buckets", "features"),
    ("head", None),
    ("cpr_context", "head"),
    ("cpr_pointer", "head"),
    ("cpr_reranker_ks", "head"),
    ("cpr_mi", "head"),
    ("cpr_base_loss", "head"),
    ("head_dropout", "head"),
    ("mos_components", "head"),
]


def test_default_space_names_and_order_are_pinned():
    rows = search_space.default_space(["time_gap", "hour"], 1000)
    assert [
        (row[0], row[3][0] if len(row) > 3 and row[3] else None) for row in rows
    ] == DEFAULT_SPACE_ROWS


def test_feature_choices_add_all_features_only_when_several():
    assert search_space.feature_choices([]) == ["none"]
    assert search_space.feature_choices(["a"]) == ["none", "a"]
    assert search_space.feature_choices(["a", "b"]) == ["none", "a", "b", "a,b"]


def test_rows_of_heads_not_searched_are_left_out():
    softmax_heads = tied_softmax_heads()
    assert softmax_heads == ("softmax", "softmax_no_dup")
    rows = search_space.default_space([], 1000, heads=softmax_heads)
    names = [row[0] for row in rows]
    head = next(row for row in rows if row[0] == "head")
    assert head[2]["values"] == list(softmax_heads)
    assert not {"cpr_mi", "head_dropout", "mos_components"} & set(names)


@pytest.mark.parametrize("train_windows, rate", [(False, 1e-3), (True, 5e-3)])
def test_first_learning_rate_is_the_protocols(train_windows, rate):
    rows = search_space.default_space([], 1000, train_windows=train_windows)
    learning_rate = next(row for row in rows if row[0] == "learning_rate")
    assert learning_rate[2]["default"] == rate


@pytest.mark.parametrize(
    "head, rate", [(None, 0.3), ("cpr", 0.3), ("mos", 0.0)]
)
def test_first_head_dropout_is_the_fixed_heads_default(head, rate):
    rows = search_space.default_space([], 1000, head=head, heads=HEADS)
    head_dropout = next(row for row in rows if row[0] == "head_dropout")
    assert head_dropout[2]["default"] == rate


def test_item_feature_rows_follow_the_features_with_the_fusion_conditional():
    choices = ["none", "genre", "year", "genre,year"]
    rows = search_space.default_space(
        ["time_gap"],
        1000,
        item_features=choices,
        item_features_default="genre,year",
    )
    names = [
        (row[0], row[3][0] if len(row) > 3 and row[3] else None) for row in rows
    ]
    at = names.index(("soft_one_hot_buckets", "features")) + 1
    assert names[at : at + 2] == [
        ("item_feature_set", None),
        ("feature_fusion", "item_feature_set"),
    ]
    # Every other row as without item features.
    assert names[:at] + names[at + 2 :] == DEFAULT_SPACE_ROWS
    item_set, fusion = rows[at], rows[at + 1]
    assert item_set[1:] == (
        "Choice",
        {"values": choices, "default": "genre,year"},
    )
    assert fusion[1:] == (
        "Choice",
        # The first trial's: ModelConfig's default, as train fuses.
        {"values": ["concat", "sum"], "default": "sum"},
        ("item_feature_set", ["genre", "year", "genre,year"]),
    )


def test_item_features_fixed_off_leave_the_fusion_out():
    rows = search_space.default_space([], 1000, item_features=["none"])
    names = [row[0] for row in rows]
    assert "item_feature_set" in names and "feature_fusion" not in names
    rows = search_space.default_space([], 1000, item_features=[])
    assert not {"item_feature_set", "feature_fusion"} & {r[0] for r in rows}


def _row(rows, name):
    return next((row for row in rows if row[0] == name), None)


def test_token_features_are_offered_after_the_float_ones():
    rows = search_space.default_space(
        ["rating", "hour"], 1000, token_features=["device", "channel"]
    )
    assert _row(rows, "features")[2]["values"] == [
        "none",
        "rating",
        "hour",
        "device",
        "channel",
        "rating,hour,device,channel",
    ]
    # A token feature is embedded, not soft one-hot encoded: the buckets
    # apply to the values with a float feature only.
    assert _row(rows, "soft_one_hot_buckets")[3] == (
        "features",
        ["rating", "hour", "rating,hour,device,channel"],
    )
    # The rows and their order are those of a space without them.
    names = [(r[0], r[3][0] if len(r) > 3 and r[3] else None) for r in rows]
    assert names == DEFAULT_SPACE_ROWS


def test_the_buckets_follow_the_fixed_or_custom_feature_values():
    rows = search_space.default_space(
        ["rating"],
        1000,
        token_features=["device"],
        feature_values=["device", "device,rating", "all"],
    )
    assert _row(rows, "soft_one_hot_buckets")[3] == (
        "features",
        ["device,rating", "all"],
    )
    # No value with a float feature (a fixed token feature, or data with
    # token features only): no buckets row, as KerasTuner takes no
    # condition without values.
    for floats, values in ((["rating"], ["device"]), ([], None)):
        rows = search_space.default_space(
            floats, 1000, token_features=["device"], feature_values=values
        )
        assert _row(rows, "soft_one_hot_buckets") is None
    assert _row(rows, "features")[2]["values"] == ["none", "device"]
