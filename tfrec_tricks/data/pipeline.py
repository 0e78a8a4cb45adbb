"""``tf.data`` pipelines over prepared examples."""

import tensorflow as tf

from tfrec_tricks.data.preparation import SequenceExamples


def make_dataset(
    examples: SequenceExamples,
    batch_size: int = 128,
    shuffle: bool = False,
    seed: int | None = None,
) -> tf.data.Dataset:
    """Batches (and optionally shuffles) examples, with prefetching.

    Each element is a dict with ``history`` [B, L] int32, ``target`` [B]
    int32, ``user`` [B] int32 and one [B, L] float32 entry per feature.

    Args:
        examples: a ``SequenceExamples`` split.
        batch_size: int. Defaults to 128.
        shuffle: bool. Reshuffle every epoch (training). Defaults to False.
        seed: int. Shuffle seed, for reproducible runs.
    """
    if batch_size <= 0:
        raise ValueError(f"batch_size must be positive. Received: {batch_size}")
    dataset = tf.data.Dataset.from_tensor_slices(examples.as_dict())
    if shuffle:
        dataset = dataset.shuffle(
            len(examples), seed=seed, reshuffle_each_iteration=True
        )
    return dataset.batch(batch_size).prefetch(tf.data.AUTOTUNE)
