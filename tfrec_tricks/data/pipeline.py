"""``tf.data`` pipelines over prepared examples."""

import numpy as np
import tensorflow as tf

from tfrec_tricks.data.preparation import SequenceExamples


def length_boundaries(max_len: int) -> list[int]:
    """Bucket boundaries for histories of 1..``max_len`` items.

    Exact lengths up to 9, then steps 25% wider each: a batch then runs
    over at most a quarter more columns than its shortest history needs.

    >>> length_boundaries(50)
    [2, 3, 4, 5, 6, 7, 8, 9, 12, 15, 19, 24, 30, 38, 48]
    """
    if max_len <= 0:
        raise ValueError(f"max_len must be positive. Received: {max_len}")
    boundaries, edge = [], 2
    while edge <= max_len:
        boundaries.append(edge)
        edge = edge + 1 if edge < 9 else int(np.ceil(edge * 1.25))
    return boundaries


def make_dataset(
    examples: SequenceExamples,
    batch_size: int = 128,
    shuffle: bool = False,
    seed: int | None = None,
    bucket_by_length: bool = False,
) -> tf.data.Dataset:
    """Batches (and optionally shuffles) examples, with prefetching.

    Each element is a dict with ``history`` [B, L] int32, ``target`` [B]
    int32, ``user`` [B] int32 and one [B, L] float32 entry per feature.

    With ``bucket_by_length`` every batch holds histories of similar length
    (``length_boundaries``). The model runs its encoder only up to the
    longest history of a batch, so on short-session data (YOOCHOOSE: 4.9
    items on average in a 50-slot window) most padding columns are never
    computed. Shuffling happens before bucketing, so batches stay random
    within a length band; each example still appears once per epoch.

    Args:
        examples: a ``SequenceExamples`` split.
        batch_size: int. Defaults to 128.
        shuffle: bool. Reshuffle every epoch (training). Defaults to False.
        seed: int. Shuffle seed, for reproducible runs.
        bucket_by_length: bool. Batch histories of similar length together.
            Defaults to False.

    Example:

    >>> import numpy as np
    >>> from tfrec_tricks.data.preparation import SequenceExamples
    >>> history = np.zeros([6, 4], np.int32)
    >>> for row, length in enumerate([1, 4, 1, 4, 1, 4]):
    ...     history[row, :length] = 7
    >>> examples = SequenceExamples(history, np.ones(6, np.int32),
    ...                             np.arange(6, dtype=np.int32), {})
    >>> dataset = make_dataset(examples, batch_size=3,
    ...                        bucket_by_length=True)
    >>> [batch["history"].numpy().sum(axis=1).tolist() for batch in dataset]
    [[7, 7, 7], [28, 28, 28]]
    """
    dataset = tf.data.Dataset.from_tensor_slices(examples.as_dict())
    if shuffle:
        dataset = dataset.shuffle(
            len(examples), seed=seed, reshuffle_each_iteration=True
        )
    lengths = (np.asarray(examples.history) > 0).sum(axis=1)
    return batch_examples(dataset, batch_size, bucket_by_length, lengths)


def batch_examples(
    dataset: tf.data.Dataset,
    batch_size: int,
    bucket_by_length: bool = False,
    lengths: np.ndarray | None = None,
) -> tf.data.Dataset:
    """Batches an unbatched dataset of examples, with prefetching.

    Args:
        dataset: elements are dicts with a ``history`` [L] entry.
        batch_size: int.
        bucket_by_length: bool. Batch histories of similar length together
            (see ``make_dataset``). Defaults to False.
        lengths: int array or None. The history lengths of the examples,
            to count the bucketed batches without a pass over ``dataset``.
    """
    if batch_size <= 0:
        raise ValueError(f"batch_size must be positive. Received: {batch_size}")
    if bucket_by_length:
        boundaries = length_boundaries(
            int(dataset.element_spec["history"].shape[0])
        )

        def length_of(example):
            return tf.math.count_nonzero(example["history"], dtype=tf.int32)

        if lengths is None:
            lengths = np.concatenate(
                list(dataset.map(length_of).batch(65536).as_numpy_iterator())
                or [np.zeros([0], np.int32)]
            )
        # Each bucket ends with one partial batch. The count lets Keras
        # run several steps per call (steps_per_execution needs it).
        bucket = np.searchsorted(boundaries, lengths, side="right")
        sizes = np.bincount(bucket, minlength=len(boundaries) + 1)
        num_batches = int(np.sum(-(-sizes // batch_size)))
        dataset = dataset.bucket_by_sequence_length(
            length_of, boundaries, [batch_size] * (len(boundaries) + 1)
        ).apply(tf.data.experimental.assert_cardinality(num_batches))
    else:
        dataset = dataset.batch(batch_size)
    return dataset.prefetch(tf.data.AUTOTUNE)
