"""The batches a trial trains and validates on.

KerasTuner hands ``HyperModel.fit`` the data given to ``tuner.search``:
here unbatched examples, so that each trial batches them with its own
``batch_size``. These functions turn that data into batches
(``data.tf_data_pipeline.batch_arrays``), as ``tfrec-tricks train`` batches it.

Example:

>>> import numpy as np
>>> arrays = {"history": np.ones((10, 4), np.int32),
...           "target": np.ones(10, np.int32)}
>>> batches, steps = training_batches(arrays, batch_size=4)
>>> steps
3
"""

from typing import Any

import numpy as np
import tensorflow as tf

from tfrec_tricks.data.prefix_merging import merge_prefixes
from tfrec_tricks.data.tf_data_pipeline import batch_arrays
from tfrec_tricks.data.train_windows import train_windows

# Examples per validation batch.
EVAL_BATCH_SIZE = 512


def training_batches(
    arrays: dict,
    batch_size: int,
    seed: int = 0,
    bucket_by_length: bool = True,
    every_position: bool = False,
    window_stride: int | None = None,
) -> tuple[tf.data.Dataset, int]:
    """The shuffled training batches of ``arrays`` and their count.

    Args:
        arrays: dict of arrays. The training examples.
        batch_size: int. Rows per batch (windows with ``window_stride``).
        seed: int. Seed of the shuffle. Defaults to 0.
        bucket_by_length: bool. Batch histories of similar length
            together. Defaults to True.
        every_position: bool. Merge each session's prefixes into one row
            (``merge_prefixes``). Defaults to False.
        window_stride: int or None. Train on windows ``window_stride``
            targets apart (``train_windows``). Defaults to None.

    Returns:
        The batches, and the batches per epoch without bucketing.
    """
    if every_position:
        arrays = merge_prefixes(arrays)
    elif window_stride is not None:
        arrays = train_windows(arrays, window_stride)
    batches = batch_arrays(
        arrays,
        batch_size,
        shuffle=True,
        seed=seed,
        bucket_by_length=bucket_by_length,
        count_targets=window_stride is None,
    )
    rows = len(arrays["history"])
    return batches, -(-rows // batch_size)


def validation_batches(validation: Any, bucket_by_length: bool = True) -> Any:
    """``validation`` batched with ``EVAL_BATCH_SIZE`` unless it already is.

    Args:
        validation: dict of arrays, or a ``tf.data.Dataset`` of examples
            (unbatched or batched).
        bucket_by_length: bool. Batch histories of similar length
            together. Defaults to True.

    Returns:
        A batched dataset (``validation`` itself if it was batched).
    """
    if isinstance(validation, dict) or is_unbatched(validation):
        return batch_arrays(
            example_arrays(validation),
            EVAL_BATCH_SIZE,
            bucket_by_length=bucket_by_length,
        )
    return validation


def example_arrays(x: Any) -> dict:
    """The examples of a dict of arrays or a dataset, as arrays.

    Args:
        x: dict of arrays, or a ``tf.data.Dataset`` of example dicts
            (unbatched or batched).

    Returns:
        dict of arrays.

    Raises:
        ValueError: ``x`` is neither, or the dataset has no examples.
    """
    if isinstance(x, dict):
        return {name: np.asarray(value) for name, value in x.items()}
    if not isinstance(x, tf.data.Dataset):
        raise ValueError(
            "Expected a tf.data.Dataset of example dicts or a dict of "
            f"arrays. Received: {type(x).__name__}"
        )
    if not is_unbatched(x):
        x = x.unbatch()
    batches = list(x.batch(65536).as_numpy_iterator())
    if not batches:
        raise ValueError("The dataset given to fit has no examples.")
    return {
        name: np.concatenate([batch[name] for batch in batches])
        for name in batches[0]
    }


def is_unbatched(dataset: Any) -> bool:
    """True for a dataset whose ``history`` elements are [L] (not [B, L]).

    Raises:
        ValueError: the dataset's elements are not dicts with a
            ``history`` entry.
    """
    if not isinstance(dataset, tf.data.Dataset):
        return False
    spec = dataset.element_spec
    if not isinstance(spec, dict) or "history" not in spec:
        raise ValueError(
            "Expected dataset elements to be dicts with a 'history' entry. "
            f"Received: element_spec={spec}"
        )
    return spec["history"].shape.rank == 1
