"""``tf.data`` pipelines over prepared examples."""

import numpy as np
import tensorflow as tf

from tfrec_tricks.data.in_memory_dataset import SequenceExamples
from tfrec_tricks.data.prefix_merging import POSITION_TARGETS, merge_prefixes
from tfrec_tricks.data.train_windows import merged_stride, train_windows


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
    every_position: bool = False,
    window_stride: int | None = None,
) -> tf.data.Dataset:
    """Batches (and optionally shuffles) examples, with prefetching.

    Each element is a dict with ``history`` [B, L] int32, ``target`` [B]
    int32, ``user`` [B] int32 and one [B, L] float32 entry per feature.

    With ``bucket_by_length`` every batch holds histories of one band of
    lengths (``length_boundaries``). The model runs its encoder only up to
    the longest history of a batch, so on short-session data (YOOCHOOSE:
    4.9 items on average in a 50-slot window) most padding columns are
    never computed (speed only: docs/decisions.md#speed-defaults). When
    shuffling, the examples are shuffled within each band and the batches'
    order is shuffled, anew every epoch; each example appears once per
    epoch. Without shuffling the batches come band by
    band, examples in their original order within a band.

    With ``every_position`` (training) a session's prefix examples are
    merged into one row with a target at each position (``merge_prefixes``,
    an extra ``position_targets`` [B, L] entry): the encoder runs once per
    session instead of once per prefix, and the model's loss averages over
    every target position. ``batch_size`` then counts target positions: a
    batch holds about ``batch_size`` of them (as many rows as the band's
    mean targets per row allow), so an epoch takes about as many steps of
    about as many examples as without merging.

    With ``window_stride`` (training) each user's training sequence is cut
    into windows of ``max_len`` items, a target at each position
    (``train_windows``: the windowed protocol of SASRec, not the prefix
    protocol; early positions of a window see shorter histories).
    ``batch_size`` then counts windows, as in SASRec.

    Args:
        examples: a ``SequenceExamples`` split.
        batch_size: int. Defaults to 128.
        shuffle: bool. Reshuffle every epoch (training). Defaults to False.
        seed: int. Shuffle seed, for reproducible runs.
        bucket_by_length: bool. Batch histories of similar length together.
            Defaults to False.
        every_position: bool. Merge prefixes into rows with a target per
            position. Defaults to False.
        window_stride: int or None. Train windows ``window_stride``
            targets apart (``1 .. max_len``; see ``train_windows``).
            Defaults to None: prefix examples.

    Example:

    >>> import numpy as np
    >>> from tfrec_tricks.data.in_memory_dataset import SequenceExamples
    >>> history = np.zeros([6, 4], np.int32)
    >>> for row, length in enumerate([1, 4, 1, 4, 1, 4]):
    ...     history[row, :length] = 7
    >>> examples = SequenceExamples(history, np.ones(6, np.int32),
    ...                             np.arange(6, dtype=np.int32), {})
    >>> dataset = make_dataset(examples, batch_size=3,
    ...                        bucket_by_length=True)
    >>> [batch["user"].numpy().tolist() for batch in dataset]
    [[0, 2, 4], [1, 3, 5]]
    """
    if merged_stride(every_position, window_stride) is None:
        arrays = examples.as_dict()
    elif every_position:
        arrays = merge_prefixes(examples)  # any examples, not only prepare's
    else:
        arrays = train_windows(examples, window_stride)
    return batch_arrays(
        arrays,
        batch_size,
        shuffle,
        seed,
        bucket_by_length,
        count_targets=window_stride is None,
    )


def batch_arrays(
    arrays: dict[str, np.ndarray],
    batch_size: int,
    shuffle: bool = False,
    seed: int | None = None,
    bucket_by_length: bool = False,
    count_targets: bool = True,
) -> tf.data.Dataset:
    """``make_dataset`` over a dict of per-example arrays.

    Args:
        arrays: ``{name: array [n, ...]}`` with a ``history`` [n, L] entry
            and, for merged prefixes, a ``position_targets`` [n, L] one.
        batch_size: int. Examples per batch: rows, or with
            ``position_targets`` target positions (on average).
        shuffle: bool. Reshuffle every epoch. Defaults to False.
        seed: int or None. Shuffle seed.
        bucket_by_length: bool. See ``make_dataset``. Defaults to False.
        count_targets: bool. With ``position_targets``, ``batch_size``
            counts target positions; False: rows (training windows).
    """
    if batch_size <= 0:
        raise ValueError(f"batch_size must be positive. Received: {batch_size}")
    history = np.asarray(arrays["history"])
    targets_per_row = np.ones(len(history))
    if POSITION_TARGETS in arrays and count_targets:
        targets_per_row = (np.asarray(arrays[POSITION_TARGETS]) > 0).sum(1)
    if not bucket_by_length:
        dataset = tf.data.Dataset.from_tensor_slices(arrays)
        if shuffle:
            dataset = dataset.shuffle(
                len(arrays["history"]), seed=seed, reshuffle_each_iteration=True
            )
        rows = rows_per_batch(
            batch_size, targets_per_row.sum(), len(targets_per_row)
        )
        return without_autotune(dataset.batch(rows).prefetch(tf.data.AUTOTUNE))

    band = np.searchsorted(
        length_boundaries(history.shape[1]),
        (history > 0).sum(axis=1),
        side="right",
    )
    # Stable sorts keep the (shuffled) order within a band.
    by_band = np.argsort(band, kind="stable")
    starts = np.flatnonzero(np.diff(band[by_band], prepend=-1))
    ends = np.append(starts[1:], len(band))
    cuts = [
        range(
            a,
            b,
            rows_per_batch(
                batch_size, targets_per_row[by_band[a:b]].sum(), b - a
            ),
        )
        for a, b in zip(starts, ends)
    ]
    bounds = [
        (a, min(a + r.step, end)) for r, end in zip(cuts, ends) for a in r
    ]
    rng = np.random.default_rng(seed)

    def index_batches():
        # One epoch of batches. Computed here rather than with tf.data's
        # group_by_window, which costs about 2 s per YOOCHOOSE epoch
        # (docs/decisions.md#input-pipeline).
        order = rng.permutation(len(band)) if shuffle else np.arange(len(band))
        order = order[np.argsort(band[order], kind="stable")]
        batches = [order[a:b] for a, b in bounds]
        for i in (
            rng.permutation(len(batches)) if shuffle else range(len(batches))
        ):
            yield batches[i]

    columns = {name: tf.constant(value) for name, value in arrays.items()}
    dataset = tf.data.Dataset.from_generator(
        index_batches, output_signature=tf.TensorSpec([None], tf.int64)
    )
    dataset = dataset.map(
        lambda rows: {
            name: tf.gather(value, rows) for name, value in columns.items()
        },
        num_parallel_calls=tf.data.AUTOTUNE,
        deterministic=True,
    )
    # Keras needs the batch count to run several steps per call.
    dataset = dataset.apply(
        tf.data.experimental.assert_cardinality(len(bounds))
    )
    return without_autotune(dataset.prefetch(tf.data.AUTOTUNE))


def without_autotune(dataset: tf.data.Dataset) -> tf.data.Dataset:
    """``dataset`` without tf.data's autotuning thread.

    That thread sleeps between optimisation rounds for a period that
    doubles from 10 ms, and destroying an iterator waits for its current
    sleep to end. Keras makes a new iterator for each epoch's training and
    validation passes, so the waits grow to 5.12 s (then 10.24 s) per
    pass: a 2.5 s YOOCHOOSE epoch took 5.1 s of wall time, measured. The
    pipelines here are light (a gather per batch), so the legacy
    prefetch buffer without the thread keeps up
    (docs/decisions.md#input-pipeline).
    """
    options = tf.data.Options()
    options.autotune.enabled = False
    return dataset.with_options(options)


def rows_per_batch(batch_size: int, targets: float, rows: float) -> int:
    """Rows that hold about ``batch_size`` targets, at least one.

    ``targets`` and ``rows`` are totals (or any two numbers in the same
    ratio): a band's rows hold ``targets / rows`` targets on average.
    """
    if not rows:
        return batch_size
    mean = max(targets / rows, 1.0)
    return max(1, int(round(batch_size / mean)))
