"""prepared.format: shard names, the user record round trip, histograms."""

import collections

import numpy as np
import pytest
import tensorflow as tf

from tfrec_tricks.data.prepared import format as fmt


def test_shard_names_are_zero_padded_and_sort_in_order():
    names = [fmt.shard_name(k, 12) for k in range(12)]
    assert names[1] == "sequences-00001-of-00012.tfrecord"
    assert sorted(names) == names


def test_user_records_parse_back_to_what_was_written():
    users = [
        (4, [3, 1, 3], 1, 2, {"time_gap": [0.0, 2.5, 1.0]}),
        (0, [7], -1, -1, {"time_gap": [0.0]}),
    ]
    serialized = [
        fmt.user_example(user, np.array(items), valid, test, features)
        for user, items, valid, test, features in users
    ]
    parsed = fmt.parse_users(tf.constant(serialized), ["time_gap"])
    assert parsed["user"].numpy().tolist() == [4, 0]
    assert parsed["items"].to_list() == [[3, 1, 3], [7]]
    assert parsed["validation_position"].numpy().tolist() == [1, -1]
    assert parsed["test_position"].numpy().tolist() == [2, -1]
    assert parsed["time_gap"].to_list() == [[0.0, 2.5, 1.0], [0.0]]
    assert set(parsed) == {
        "user",
        "items",
        "validation_position",
        "test_position",
        "time_gap",
    }


def test_token_ids_parse_back_as_int64_beside_the_float_features():
    users = [
        (4, [3, 1, 3], {"device": [2, 0, 1], "channel": [3, 3, 2]}),
        (0, [7], {"device": [5], "channel": [0]}),
    ]
    serialized = [
        fmt.user_example(
            user, np.array(items), -1, len(items) - 1,
            {"time_gap": np.zeros(len(items))}, tokens,
        )
        for user, items, tokens in users
    ]  # fmt: skip
    record = tf.train.Example.FromString(serialized[0]).features.feature
    assert list(record["token/device"].int64_list.value) == [2, 0, 1]
    parsed = fmt.parse_users(
        tf.constant(serialized), ["time_gap"], ["device", "channel"]
    )
    assert parsed["device"].dtype == tf.int64
    assert parsed["device"].to_list() == [[2, 0, 1], [5]]
    assert parsed["channel"].to_list() == [[3, 3, 2], [0]]
    assert parsed["time_gap"].to_list() == [[0.0, 0.0, 0.0], [0.0]]
    # Parsed only when asked for, as the float features.
    assert "device" not in fmt.parse_users(tf.constant(serialized), [])
    with pytest.raises(ValueError, match="float or token, not both"):
        fmt.parse_users(tf.constant(serialized), ["device"], ["device"])


def test_count_histogram_equals_a_counter():
    values = np.random.default_rng(0).integers(0, 12, size=200)
    naive = collections.Counter(int(v) for v in values)
    histogram = fmt.count_histogram(values)
    assert histogram == {str(v): c for v, c in sorted(naive.items())}
    assert [int(k) for k in histogram] == sorted(naive)
    assert fmt.count_histogram(np.array([], np.int64)) == {}
