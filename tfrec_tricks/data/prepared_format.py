"""The on-disk prepared dataset: its files, records and checks.

A prepared dataset is a folder (``tfrec-tricks prepare --output DIR``):

- ``sequences-SSSSS-of-NNNNN.tfrecord``: one ``tf.train.Example`` per user,
  holding the user's sequence once (not each prefix):

  ====================== ======= ======================================
  feature                type    value
  ====================== ======= ======================================
  ``user``               int64   the user's index (``vocabulary.json``)
  ``items``              int64[] contiguous item ids in time order
  ``validation_position`` int64  index in ``items`` of the validation
                                 target, -1 if none
  ``test_position``      int64   likewise for the test target
  ``feature/<name>``     float[] one value per item (``time_gap``: NaN at
                                 the first)
  ====================== ======= ======================================

  ``tf.train.Example`` with variable-length lists rather than
  ``SequenceExample``: one record per user, parsed a batch of users at a
  time into ragged tensors, from which ``PreparedDataset`` forms the
  (history, target) windows.
- ``vocabulary.json``: raw ids of items and users (``Vocabulary``).
- ``statistics.json``: training-target counts and feature moments
  (``TrainingStatistics``).
- ``metadata.json``: the format version, the preparation options, the
  counts the input pipeline needs to size its batches, and every shard's
  user count, byte size and SHA-256. Written last: a folder without it is
  not a prepared dataset.

The folder is written under a temporary name and renamed when complete, so
a reader never sees half of one.
"""

import json
import os

import numpy as np
import tensorflow as tf

import tfrec_tricks
from tfrec_tricks.atomic_files import file_sha256
from tfrec_tricks.errors import DataError

FORMAT = "tfrec_tricks.prepared"
FORMAT_VERSION = 1
METADATA_FILE = "metadata.json"
VOCABULARY_FILE = "vocabulary.json"
STATISTICS_FILE = "statistics.json"
ITEM_GRAPH_FILE = "item_graph.json"
FEATURE_PREFIX = "feature/"


def shard_name(index: int, count: int) -> str:
    """``sequences-00001-of-00004.tfrecord``."""
    return f"sequences-{index:05d}-of-{count:05d}.tfrecord"


def user_example(
    user: int,
    items: np.ndarray,
    validation_position: int,
    test_position: int,
    features: dict[str, np.ndarray],
) -> bytes:
    """One user's serialized ``tf.train.Example`` (see the module doc)."""

    def ints(values):
        return tf.train.Feature(int64_list=tf.train.Int64List(value=values))

    feature = {
        "user": ints([int(user)]),
        "items": ints(np.asarray(items, np.int64)),
        "validation_position": ints([int(validation_position)]),
        "test_position": ints([int(test_position)]),
    }
    for name, values in features.items():
        feature[FEATURE_PREFIX + name] = tf.train.Feature(
            float_list=tf.train.FloatList(value=np.asarray(values, np.float32))
        )
    example = tf.train.Example(features=tf.train.Features(feature=feature))
    return example.SerializeToString()


def parse_users(
    serialized: tf.Tensor, feature_names: list[str]
) -> dict[str, tf.Tensor]:
    """Parses a batch of serialized user records.

    Returns:
        ``user``, ``validation_position``, ``test_position``: int64 [U];
        ``items``: int64 ragged [U, None]; and one float32 ragged
        [U, None] per feature name.
    """
    spec = {
        "user": tf.io.FixedLenFeature([], tf.int64),
        "validation_position": tf.io.FixedLenFeature([], tf.int64),
        "test_position": tf.io.FixedLenFeature([], tf.int64),
        "items": tf.io.RaggedFeature(tf.int64, row_splits_dtype=tf.int64),
    }
    for name in feature_names:
        spec[FEATURE_PREFIX + name] = tf.io.RaggedFeature(
            tf.float32, row_splits_dtype=tf.int64
        )
    parsed = tf.io.parse_example(serialized, spec)
    return {
        name[len(FEATURE_PREFIX) :]
        if name.startswith(FEATURE_PREFIX)
        else name: value
        for name, value in parsed.items()
    }


def count_histogram(values: np.ndarray) -> dict[str, int]:
    """``{value: how many}`` with string keys (JSON), values ascending."""
    unique, counts = np.unique(np.asarray(values), return_counts=True)
    return {str(int(v)): int(c) for v, c in zip(unique, counts)}


def read_metadata(path: str) -> dict:
    """Reads and checks ``path``'s ``metadata.json``.

    Raises:
        DataError: ``path`` is missing, is not a prepared dataset (no
            ``metadata.json``: a half-written folder or another folder),
            or was written by another format version.
    """
    if not os.path.isdir(path):
        raise DataError(
            f"Prepared dataset not found: {path!r} is not a folder (make "
            "one with `tfrec-tricks prepare --output DIR`)."
        )
    metadata_path = os.path.join(path, METADATA_FILE)
    if not os.path.isfile(metadata_path):
        raise DataError(
            f"{path!r} is not a prepared dataset: {METADATA_FILE} is "
            "missing (a preparation that did not finish, or another "
            "folder). Prepare it again with `tfrec-tricks prepare`."
        )
    try:
        with open(metadata_path, encoding="utf-8") as handle:
            metadata = json.load(handle)
    except (ValueError, UnicodeDecodeError) as error:
        raise DataError(f"{metadata_path}: not valid JSON ({error}).") from None
    if not isinstance(metadata, dict) or metadata.get("format") != FORMAT:
        raise DataError(
            f"{metadata_path} does not describe a tfrec_tricks prepared "
            f"dataset (format {FORMAT!r})."
        )
    version = metadata.get("format_version")
    if version != FORMAT_VERSION:
        raise DataError(
            f"{path!r} was prepared in format version {version!r} (by "
            f"tfrec_tricks {metadata.get('tfrec_tricks_version')}); this "
            f"tfrec_tricks {tfrec_tricks.__version__} reads version "
            f"{FORMAT_VERSION}. Prepare it again."
        )
    return metadata


def check_shards(path: str, metadata: dict, verify_hashes: bool = True) -> None:
    """Refuses shards that are missing or differ from ``metadata.json``.

    Sizes are always compared; with ``verify_hashes`` the SHA-256 of each
    shard too (a second of reading per GB).
    """
    for shard in metadata["shards"]:
        file = os.path.join(path, shard["file"])
        if not os.path.isfile(file):
            raise DataError(
                f"{path!r}: shard {shard['file']} listed in {METADATA_FILE} "
                "is missing. Prepare the dataset again."
            )
        size = os.path.getsize(file)
        if size != shard["bytes"]:
            raise DataError(
                f"{file}: {size} bytes, {METADATA_FILE} says "
                f"{shard['bytes']}: the shard was changed or replaced after "
                "preparation. Prepare the dataset again."
            )
        if verify_hashes and file_sha256(file) != shard["sha256"]:
            raise DataError(
                f"{file}: its SHA-256 differs from {METADATA_FILE}'s: the "
                "shard was changed or replaced after preparation. Prepare "
                "the dataset again."
            )
    listed = {shard["file"] for shard in metadata["shards"]}
    extra = sorted(
        entry
        for entry in os.listdir(path)
        if entry.endswith(".tfrecord") and entry not in listed
    )
    if extra:
        raise DataError(
            f"{path!r} holds shards that {METADATA_FILE} does not list: "
            f"{extra}. Prepare the dataset again into an empty folder."
        )
