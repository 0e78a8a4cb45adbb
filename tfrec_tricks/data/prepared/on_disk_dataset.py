"""A prepared dataset on disk, streamed with ``tf.data``.

``tfrec-tricks prepare --output DIR`` (or ``write_prepared``) stores each
user's sequence once; ``OnDiskDataset`` reads the shards and forms the
same examples as the in-memory path on the fly, a batch of users at a time:
the prefix examples of ``prepare``, or with ``every_position`` the merged
rows of ``merge_prefixes``. The dataset never sits in memory: a run holds
a shuffle buffer of users and one of examples.

A dataset prepared from files with ``token`` columns carries them as the
in-memory ``prepare`` does (``interaction_tokens``): the examples hold
each selected one (``select_token_features``) as int32 ids aligned with
``history``.
"""

import copy
import json
import math
import os

import numpy as np
import tensorflow as tf

from tfrec_tricks.data.in_memory_dataset import Vocabulary
from tfrec_tricks.data.interaction_tokens import (
    InteractionTokenSpec,
    specs_from_json,
)
from tfrec_tricks.data.item_features.encoding import ItemFeatures
from tfrec_tricks.data.prefix_merging import POSITION_TARGETS
from tfrec_tricks.data.prepared import format as fmt
from tfrec_tricks.data.prepared.item_features import (
    ITEM_FEATURE_FILES,
    load_item_features,
)
from tfrec_tricks.data.tf_data_pipeline import (
    length_boundaries,
    rows_per_batch,
    without_autotune,
)
from tfrec_tricks.data.train_windows import (
    check_stride,
    merged_stride,
    window_ends,
)
from tfrec_tricks.data.training_statistics import TrainingStatistics
from tfrec_tricks.errors import DataError

SPLIT_NAMES = ("train", "validation", "test")
# Users parsed and cut into examples per map call.
USERS_PER_PARSE = 256
# Shuffle buffers while training: of users (across shards), then of
# examples (across users). Their memory, not the dataset's, is what a run
# holds.
USER_SHUFFLE_BUFFER = 2_048
EXAMPLE_SHUFFLE_BUFFER = 16_384
# An example's length band, while ``batches`` groups examples by it.
BAND = "_band"


class OnDiskDataset:
    """A prepared dataset folder: metadata, vocabulary, statistics, shards.

    Prepared with item attributes (``prepare --item-features``), it holds
    them as an ``InMemoryDataset`` does after ``with_item_features``:
    ``item_features`` (the encoded ``ItemFeatures``, cold items included)
    and ``trained_items`` (the bool [N] mask of the items of the training
    examples); both None without.

    Prepared from files with ``token`` columns, it holds their specs as
    ``token_features`` (``InteractionTokenSpec``, by name; empty without)
    and its examples each one's ids, as ``prepare``'s ``tokens`` do;
    ``select_token_features`` keeps those a run selects.

    Args:
        path: str. The folder ``tfrec-tricks prepare --output`` wrote.
        verify_hashes: bool. Compare each file's SHA-256 with
            ``metadata.json`` (sizes are always compared). Defaults to
            True.

    Raises:
        DataError: the folder is missing, half-written, from another
            format version, or its files (shards, vocabulary, statistics,
            item graph, item features, token features) differ from
            ``metadata.json``'s list: one missing, changed or not listed.

    Example:

    >>> import tempfile
    >>> from tfrec_tricks.data.sources import synthetic
    >>> from tfrec_tricks.data.user_sequences import user_sequences
    >>> from tfrec_tricks.data.prepared.writer import write_prepared
    >>> table = synthetic.generate(num_users=30, num_items=60).interactions
    >>> sequences = user_sequences(table.users, table.items, table.timestamps)
    >>> path = write_prepared(sequences, tempfile.mkdtemp() + "/prepared",
    ...                       {"max_len": 20}, num_shards=2)
    >>> dataset = OnDiskDataset(path)
    >>> dataset.num_examples("test")
    30
    >>> batch = next(iter(dataset.batches("test", batch_size=8)))
    >>> batch["history"].shape, batch["target"].shape
    (TensorShape([8, 20]), TensorShape([8]))
    """

    def __init__(self, path: str, verify_hashes: bool = True):
        self.path = path
        self.metadata = fmt.read_metadata(path)
        fmt.check_files(path, self.metadata, verify_hashes)
        # Datasets prepared before item features name none.
        self.item_feature_names = list(
            self.metadata.get("item_feature_names", [])
        )
        needed = [fmt.VOCABULARY_FILE, fmt.STATISTICS_FILE]
        if self.item_feature_names:
            needed += ITEM_FEATURE_FILES
        for name in needed:
            if not os.path.isfile(os.path.join(path, name)):
                raise DataError(
                    f"{path!r}: {name} is missing. Prepare the dataset again."
                )
        self.max_len = int(self.metadata["options"]["max_len"])
        self.feature_names = list(self.metadata["feature_names"])
        self.token_features = self._load_token_features()
        self._vocabulary = None
        self._statistics = None
        self._item_features = None

    def _load_token_features(self) -> tuple[InteractionTokenSpec, ...]:
        """The specs of ``interaction_tokens.json``, checked against
        ``metadata.json``'s ``token_feature_names`` (a dataset prepared
        before token features names none and has no file)."""
        named = list(self.metadata.get("token_feature_names", []))
        path = os.path.join(self.path, fmt.INTERACTION_TOKENS_FILE)
        if not named and not os.path.isfile(path):
            return ()
        if not os.path.isfile(path):
            raise DataError(
                f"{self.path!r}: {fmt.INTERACTION_TOKENS_FILE} is missing. "
                "Prepare the dataset again."
            )
        try:
            with open(path, encoding="utf-8") as handle:
                specs = specs_from_json(handle.read())
        except (ValueError, UnicodeDecodeError) as error:
            raise DataError(
                f"{path}: not token feature specs ({error}). Prepare the "
                "dataset again."
            ) from None
        if [spec.name for spec in specs] != named:
            raise DataError(
                f"{path}: holds the token features "
                f"{[spec.name for spec in specs]}; {fmt.METADATA_FILE} says "
                f"{named}. Prepare the dataset again."
            )
        return specs

    # -------------------------------------------------------------- content

    @property
    def token_feature_names(self) -> list[str]:
        """The names of ``token_features``, in order."""
        return [spec.name for spec in self.token_features]

    def select_token_features(self, names) -> "OnDiskDataset":
        """This dataset with only the token features of ``names``: its
        examples hold those (the shards are read as before)."""
        names = set(names)
        selected = copy.copy(self)
        selected.token_features = tuple(
            spec for spec in self.token_features if spec.name in names
        )
        return selected

    @property
    def files(self) -> list[str]:
        """The shards' paths, in order."""
        return [
            os.path.join(self.path, shard["file"])
            for shard in self.metadata["shards"]
        ]

    @property
    def num_items(self) -> int:
        """N: the number of item ids, padding included."""
        return int(self.metadata["num_items"])

    @property
    def vocabulary(self) -> Vocabulary:
        if self._vocabulary is None:
            self._vocabulary = Vocabulary.load(
                os.path.join(self.path, fmt.VOCABULARY_FILE)
            )
        return self._vocabulary

    @property
    def statistics(self) -> TrainingStatistics:
        if self._statistics is None:
            with open(os.path.join(self.path, fmt.STATISTICS_FILE)) as handle:
                self._statistics = TrainingStatistics.from_dict(
                    json.load(handle)
                )
        return self._statistics

    @property
    def item_features(self) -> ItemFeatures | None:
        """The encoded item attributes (``ItemFeatures``), or None."""
        return self._load_item_features()[0]

    @property
    def trained_items(self) -> np.ndarray | None:
        """bool [N]: the items of the training examples (the others are
        cold items), or None without item features."""
        return self._load_item_features()[1]

    def _load_item_features(self) -> tuple:
        if not self.item_feature_names:
            return None, None
        if self._item_features is None:
            self._item_features = load_item_features(
                self.path, self.num_items, self.item_feature_names
            )
        return self._item_features

    def item_graph(self) -> np.ndarray | None:
        """The source's item graph ([E, 2] raw item ids), if it had one."""
        path = os.path.join(self.path, fmt.ITEM_GRAPH_FILE)
        if not os.path.isfile(path):
            return None
        with open(path, encoding="utf-8") as handle:
            return np.asarray(json.load(handle), str).reshape(-1, 2)

    def num_examples(self, split: str) -> int:
        """Prefix examples of ``split`` (what the in-memory path holds)."""
        _, targets = self._length_counts(split, stride=None)
        return int(targets.sum())

    def summary(self) -> str:
        metadata = self.metadata
        return (
            f"{self.path}: {metadata['num_users']:,} users, "
            f"{self.num_items - 1:,} items, "
            f"{metadata['num_interactions']:,} interactions in "
            f"{len(metadata['shards'])} shards; examples: "
            + ", ".join(f"{s} {self.num_examples(s):,}" for s in SPLIT_NAMES)
            + f"; max_len {self.max_len}; features: "
            f"{self.feature_names or 'none'}"
            + (
                f"; token features: {self.token_feature_names}"
                if self.token_features
                else ""
            )
            + (
                f"; item features: {self.item_feature_names}"
                if self.item_feature_names
                else ""
            )
        )

    # ------------------------------------------------------------ datasets

    def examples(
        self,
        split: str,
        every_position: bool = False,
        shuffle: bool = False,
        seed: int | None = None,
        input_context: tf.distribute.InputContext | None = None,
        window_stride: int | None = None,
    ) -> tf.data.Dataset:
        """Unbatched examples of ``split``, formed from the shards.

        Each element has ``history`` [max_len] int32 (right-padded),
        ``target`` and ``user`` int32 scalars, one [max_len] float32 entry
        per feature, one [max_len] int32 entry per selected token feature
        (``token_features``: 0 at padding) and, with ``every_position``
        or ``window_stride`` (train only), a ``position_targets``
        [max_len] int32 entry.

        Args:
            split: str. "train", "validation" or "test".
            every_position: bool. Merged rows (see ``merge_prefixes``).
            shuffle: bool. Shuffle shards, users and examples (training).
            seed: int or None. Shuffle seed.
            input_context: a ``tf.distribute.InputContext``: read only this
                input pipeline's shards (multi-worker training).
            window_stride: int or None. Training windows (see
                ``tfrec_tricks.data.train_windows``).
        """
        return self._examples(
            split,
            merged_stride(every_position, window_stride),
            shuffle,
            seed,
            input_context,
        )

    def _examples(
        self,
        split: str,
        stride: int | None,
        shuffle: bool,
        seed: int | None,
        input_context: tf.distribute.InputContext | None,
        boundaries: list[int] | None = None,
    ) -> tf.data.Dataset:
        """``examples``; with ``boundaries``, each has its ``BAND`` too.

        ``stride``: merged rows (``user_windows``); None: prefix rows.

        The band (``np.searchsorted(boundaries, history length, "right")``)
        is computed for a batch of users' examples at once: per example,
        in ``group_by_window``'s key function, it cost more than the rest
        of the pipeline (2 s per YOOCHOOSE-100k epoch, as long as the
        epoch's training steps).
        """
        _check_split(split)
        if stride is not None and split != "train":
            raise ValueError(
                "every_position and window_stride form training rows only. "
                f"Received: split={split!r}"
            )
        files = self.files
        dataset = tf.data.Dataset.from_tensor_slices(files)
        if input_context is not None and input_context.num_input_pipelines > 1:
            dataset = dataset.shard(
                input_context.num_input_pipelines,
                input_context.input_pipeline_id,
            )
        if shuffle:
            dataset = dataset.shuffle(
                len(files), seed=seed, reshuffle_each_iteration=True
            )
        if shuffle:
            # Several shards at a time: users of different shards mix.
            cycle = min(4, len(files))
            dataset = dataset.interleave(
                tf.data.TFRecordDataset,
                cycle_length=cycle,
                num_parallel_calls=cycle,
                deterministic=True,
            )
        else:
            dataset = dataset.flat_map(tf.data.TFRecordDataset)
        if shuffle:
            dataset = dataset.shuffle(USER_SHUFFLE_BUFFER, seed=seed)
        max_len, names = self.max_len, self.feature_names
        tokens = self.token_feature_names

        def windows(serialized: tf.Tensor) -> dict[str, tf.Tensor]:
            examples = user_windows(
                fmt.parse_users(serialized, names, tokens),
                split,
                max_len,
                stride,
            )
            if boundaries is not None:
                length = tf.reduce_sum(
                    tf.cast(examples["history"] > 0, tf.int64), axis=1
                )
                examples[BAND] = tf.searchsorted(
                    tf.constant(boundaries, tf.int64),
                    length,
                    side="right",
                    out_type=tf.int64,
                )
            return examples

        dataset = dataset.batch(USERS_PER_PARSE).map(
            windows, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True
        )
        dataset = dataset.unbatch()
        if shuffle:
            dataset = dataset.shuffle(EXAMPLE_SHUFFLE_BUFFER, seed=seed)
        return dataset

    def batches(
        self,
        split: str,
        batch_size: int,
        shuffle: bool = False,
        seed: int | None = None,
        bucket_by_length: bool = False,
        every_position: bool = False,
        input_context: tf.distribute.InputContext | None = None,
        window_stride: int | None = None,
    ) -> tf.data.Dataset:
        """Batches of ``split``, as ``make_dataset`` batches in-memory data.

        ``batch_size``, ``bucket_by_length``, ``every_position`` and
        ``window_stride`` mean
        what they mean for ``tfrec_tricks.data.tf_data_pipeline.make_dataset``:
        with bucketing, each batch holds one band of history lengths
        (``length_boundaries``), as many rows as hold about ``batch_size``
        targets in that band. Bands are batched as their examples stream
        in (``tf.data``'s ``group_by_window``), so batches of different
        bands interleave. The batch count is known from ``metadata.json``
        (Keras shows it), except when ``input_context`` reads a share of
        the shards.
        """
        if batch_size <= 0:
            raise ValueError(
                f"batch_size must be positive. Received: {batch_size}"
            )
        boundaries = length_boundaries(self.max_len)
        stride = merged_stride(every_position, window_stride)
        dataset = self._examples(
            split,
            stride,
            shuffle,
            seed,
            input_context,
            boundaries if bucket_by_length else None,
        )
        row_counts, target_counts = self._length_counts(split, stride)
        if window_stride is not None:
            target_counts = row_counts  # batch_size counts windows
        if bucket_by_length:
            band = np.searchsorted(
                boundaries, np.arange(self.max_len + 1), side="right"
            )
            bands = len(boundaries) + 1
            rows = np.zeros(bands, np.int64)
            np.add.at(rows, band, row_counts)
            band_targets = np.zeros(bands, np.int64)
            np.add.at(band_targets, band, target_counts)
            sizes = [
                rows_per_batch(batch_size, t, r)
                for t, r in zip(band_targets, rows)
            ]
            count = sum(math.ceil(r / s) for r, s in zip(rows, sizes))
            size_of_band = tf.constant(sizes, tf.int64)
            dataset = dataset.group_by_window(
                key_func=lambda example: example[BAND],
                reduce_func=lambda key, window: window.batch(size_of_band[key]),
                window_size_func=lambda key: size_of_band[key],
            ).map(
                lambda batch: {k: v for k, v in batch.items() if k != BAND},
                num_parallel_calls=tf.data.AUTOTUNE,
                deterministic=True,
            )
        else:
            total = int(row_counts.sum())
            size = rows_per_batch(batch_size, target_counts.sum(), total)
            count = math.ceil(total / size)
            dataset = dataset.batch(size)
        if input_context is None or input_context.num_input_pipelines == 1:
            # Keras needs the batch count to run several steps per call.
            dataset = dataset.apply(
                tf.data.experimental.assert_cardinality(count)
            )
        return without_autotune(dataset.prefetch(tf.data.AUTOTUNE))

    def _length_counts(self, split: str, stride: int | None):
        """Rows and targets of ``split`` by history length.

        From ``metadata.json``'s histograms: the rows ``user_windows``
        forms (tests count the batches), counted without reading the shards
        and without an array of every row.

        Returns:
            ``(rows, targets)``: int64 arrays [max_len + 1], the number of
            rows whose history holds ``length`` items and their targets,
            at index ``length``.
        """
        _check_split(split)
        max_len = self.max_len
        rows = np.zeros(max_len + 1, np.int64)
        targets = np.zeros(max_len + 1, np.int64)
        if split != "train":
            for position, users in self.metadata[f"{split}_positions"].items():
                rows[min(int(position), max_len)] += users
            return rows, rows.copy()
        histogram = self.metadata["train_ends"]
        ends = np.array([int(end) for end in histogram], np.int64)
        users = np.array(list(histogram.values()), np.int64)
        if stride is not None:
            which, last, runs = window_ends(ends, max_len, stride)
            length = np.minimum(last, max_len)
            np.add.at(rows, length, users[which])
            np.add.at(targets, length, users[which] * runs)
            return rows, targets
        for end, count in zip(ends, users):
            # Prefix rows: one per target, histories of 1 .. max_len items.
            shorter = min(end, max_len)
            rows[1:shorter] += count
            rows[shorter] += count + count * max(end - max_len, 0)
        return rows, rows.copy()


def user_windows(
    users: dict[str, tf.Tensor],
    split: str,
    max_len: int,
    stride: int | None = None,
) -> dict[str, tf.Tensor]:
    """The examples of a batch of parsed users (``parse_users``).

    Args:
        users: parsed user records: ragged ``items``, float features and
            int64 token features, and ``user``, ``validation_position``,
            ``test_position`` [U].
        split: str. "train": a target at every position from the second
            up to the first held-out one; "validation" / "test": the
            held-out position, for users that have one.
        max_len: int. History length.
        stride: int or None. Train only: merged rows with a target per
            position, the windows of ``window_ends`` (1: the rows of
            ``merge_prefixes``, one per user holding its first
            ``min(train_end, max_len)`` targets, plus one per later
            target; ``max_len``: non-overlapping windows). None: one row
            per target.

    Returns:
        A dict of batched examples (``history`` [E, max_len], float
        features, int32 token features, ...), the rows of
        ``sequence_examples`` / ``merge_prefixes`` / ``train_windows``
        for these users.
    """
    items = users["items"]
    values = items.flat_values
    lengths = items.row_lengths()
    validation = users["validation_position"]
    test = users["test_position"]
    if split == "train":
        held_out = tf.where(
            validation >= 0, validation, tf.where(test >= 0, test, -1)
        )
        ends = tf.where(held_out >= 0, held_out - 1, lengths - 1)
        if stride is not None:
            positions, runs = _window_ends(ends, max_len, stride)
        else:
            positions = tf.ragged.range(
                tf.ones_like(ends), tf.maximum(ends + 1, 1)
            )
    else:
        held_out = validation if split == "validation" else test
        positions = tf.RaggedTensor.from_row_lengths(
            tf.boolean_mask(held_out, held_out >= 0),
            tf.cast(held_out >= 0, tf.int64),
        )
    row = positions.value_rowids()
    position = positions.flat_values
    at = tf.gather(items.row_starts(), row) + position
    length = tf.minimum(position, max_len)
    steps = tf.range(max_len, dtype=tf.int64)[None, :]
    valid = steps < length[:, None]
    index = tf.where(valid, (at - length)[:, None] + steps, 0)
    examples = {
        "history": tf.cast(
            tf.where(valid, tf.gather(values, index), 0), tf.int32
        ),
        "target": tf.cast(tf.gather(values, at), tf.int32),
        "user": tf.cast(tf.gather(users["user"], row), tf.int32),
    }
    for name, column in users.items():
        if not isinstance(column, tf.RaggedTensor) or name == "items":
            continue
        gathered = tf.gather(column.flat_values, index)
        if column.dtype.is_integer:
            # A token feature: ids, 0 at padding (``SequenceExamples``).
            examples[name] = tf.cast(tf.where(valid, gathered, 0), tf.int32)
        else:
            examples[name] = tf.where(valid, gathered, 0.0)
    if split == "train" and stride is not None:
        # Position p's target is the item after it, within the row's run.
        in_run = valid & (steps >= (length - runs)[:, None])
        following = tf.gather(values, tf.where(in_run, index + 1, 0))
        examples[POSITION_TARGETS] = tf.cast(
            tf.where(in_run, following, 0), tf.int32
        )
    return examples


def _window_ends(
    ends: tf.Tensor, max_len: int, stride: int
) -> tuple[tf.RaggedTensor, tf.Tensor]:
    """``window_ends`` in TensorFlow: positions [U, None] and runs [W]."""
    check_stride(stride, max_len)
    later = tf.where(ends > max_len, (ends - max_len + stride - 1) // stride, 0)
    first = ends - later * stride
    index = tf.ragged.range(tf.cast(ends >= 1, tf.int64) + later)
    first_of_row = tf.gather(first, index.value_rowids())
    starts = first_of_row + index.flat_values * stride
    positions = index.with_flat_values(starts)
    runs = tf.where(
        index.flat_values == 0, first_of_row, tf.constant(stride, tf.int64)
    )
    return positions, runs


def _check_split(split: str) -> None:
    if split not in SPLIT_NAMES:
        raise ValueError(
            f"split must be one of {SPLIT_NAMES}. Received: split={split!r}"
        )
