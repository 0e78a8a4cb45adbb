"""A trial's training and validation batches."""

import numpy as np
import pytest
import tensorflow as tf

from tfrec_tricks.data.prefix_merging import POSITION_TARGETS
from tfrec_tricks.tuning.trial_batches import (
    EVAL_BATCH_SIZE,
    example_arrays,
    is_unbatched,
    training_batches,
    validation_batches,
)


def _arrays(rows=10, max_len=4):
    history = np.zeros((rows, max_len), np.int32)
    for row in range(rows):
        history[row, -(1 + row % max_len) :] = row + 1
    return {"history": history, "target": np.arange(rows, dtype=np.int32)}


def test_example_arrays_of_a_dict_and_of_datasets():
    arrays = _arrays()
    unbatched = tf.data.Dataset.from_tensor_slices(arrays)
    for x in (arrays, unbatched, unbatched.batch(3)):
        got = example_arrays(x)
        np.testing.assert_array_equal(got["history"], arrays["history"])
        np.testing.assert_array_equal(got["target"], arrays["target"])


def test_example_arrays_refuses_other_inputs():
    with pytest.raises(ValueError, match="Received: list"):
        example_arrays([1, 2])
    empty = tf.data.Dataset.from_tensor_slices(_arrays()).take(0)
    with pytest.raises(ValueError, match="no examples"):
        example_arrays(empty)


def test_is_unbatched():
    dataset = tf.data.Dataset.from_tensor_slices(_arrays())
    assert is_unbatched(dataset)
    assert not is_unbatched(dataset.batch(2))
    assert not is_unbatched(_arrays())
    with pytest.raises(ValueError, match="'history' entry"):
        is_unbatched(tf.data.Dataset.range(3))


def test_validation_batches():
    arrays = _arrays()
    batched = tf.data.Dataset.from_tensor_slices(arrays).batch(2)
    assert validation_batches(batched) is batched
    batches = list(validation_batches(arrays, bucket_by_length=False))
    assert [len(b["history"]) for b in batches] == [len(arrays["history"])]
    assert EVAL_BATCH_SIZE > len(arrays["history"])


@pytest.mark.parametrize(
    "every_position, window_stride", [(False, None), (True, None)]
)
def test_training_batches_count(every_position, window_stride):
    arrays = _arrays()
    batches, steps = training_batches(
        arrays,
        batch_size=4,
        bucket_by_length=False,
        every_position=every_position,
        window_stride=window_stride,
    )
    first = next(iter(batches))
    assert (POSITION_TARGETS in first) == every_position
    if not every_position:
        assert steps == 3
        assert sum(len(b["history"]) for b in batches) == 10
