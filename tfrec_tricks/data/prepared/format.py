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
  ``token/<name>``       int64[] one id per item: a ``token`` column
                                 encoded (``interaction_tokens``: 0 no
                                 value, 1 out-of-vocabulary, 2.. the
                                 vocabulary)
  ====================== ======= ======================================

  ``tf.train.Example`` with variable-length lists rather than
  ``SequenceExample``: one record per user, parsed a batch of users at a
  time into ragged tensors, from which ``OnDiskDataset`` forms the
  (history, target) windows.
- ``vocabulary.json``: raw ids of items and users (``Vocabulary``).
- ``statistics.json``: training-target counts and feature moments
  (``TrainingStatistics``).
- ``item_graph.json``: the source's item graph (raw item id pairs), when
  it has one (synthetic data, ml-100k).
- ``item_features.json``, ``item_features.npz`` and ``trained_items.npy``,
  when it was prepared with item attributes (``prepare --item-features``):
  the encoded ``ItemFeatures`` of every item, cold items included, and the
  bool mask of the items of the training examples
  (``prepared.item_features``).
- ``interaction_tokens.json``, when the interaction files have ``token``
  columns: each one's ``InteractionTokenSpec.to_dict()`` (name,
  vocabulary, coverage), sorted by name. Every token column is prepared
  (as every float column is); a run selects among them (``--features``).
- ``metadata.json``: the format version, the preparation options (the
  SHA-256s of the interaction and ``.item`` files among them), the item
  features' names (``item_feature_names``), the token features' names
  (``token_feature_names``), the counts the input pipeline
  needs to size its batches, every shard's user count, and the manifest:
  every other file of the folder (shards, vocabulary, statistics, item
  graph, item features, token features) with its byte size and SHA-256.
  Written last: a folder without it is not a prepared dataset. A reader
  refuses a folder with a listed file missing or changed, or a file the
  manifest does not list (``check_files``): an edited vocabulary would
  mislabel the served ids, a lost item graph turn SSE-Graph into uniform
  SSE.

The folder is written under a temporary name and renamed when complete, so
a reader never sees half of one.
"""

import json
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

import tfrec_tricks
from tfrec_tricks import ownership
from tfrec_tricks.atomic_files import file_sha256
from tfrec_tricks.errors import DataError

if TYPE_CHECKING:
    import tensorflow as tf

FORMAT = "tfrec_tricks.prepared"
# 2: ``files`` lists every file of the folder (1 listed the shards only).
FORMAT_VERSION = 2
METADATA_FILE = "metadata.json"
# The kind a prepared dataset's record names (``tfrec_tricks.ownership``).
PREPARED_KIND = "prepared dataset"
VOCABULARY_FILE = "vocabulary.json"
STATISTICS_FILE = "statistics.json"
ITEM_GRAPH_FILE = "item_graph.json"
# The token features' specs (``interaction_tokens``); absent: none.
INTERACTION_TOKENS_FILE = "interaction_tokens.json"
FEATURE_PREFIX = "feature/"
TOKEN_PREFIX = "token/"


def shard_name(index: int, count: int) -> str:
    """``sequences-00001-of-00004.tfrecord``."""
    return f"sequences-{index:05d}-of-{count:05d}.tfrecord"


def user_example(
    user: int,
    items: np.ndarray,
    validation_position: int,
    test_position: int,
    features: dict[str, np.ndarray],
    tokens: dict[str, np.ndarray] | None = None,
) -> bytes:
    """One user's serialized ``tf.train.Example`` (see the module doc).

    ``features``: float [len(items)] per name; ``tokens``: int ids
    [len(items)] per name (``interaction_tokens.encode_tokens``), or None.
    """
    # Here, not at the top: the command line reads this module's names
    # (a prepared dataset's files and kind) before TensorFlow loads.
    import tensorflow as tf

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
    for name, ids in (tokens or {}).items():
        feature[TOKEN_PREFIX + name] = ints(np.asarray(ids, np.int64))
    example = tf.train.Example(features=tf.train.Features(feature=feature))
    return example.SerializeToString()


def parse_users(
    serialized: "tf.Tensor",
    feature_names: Sequence[str],
    token_names: Sequence[str] = (),
) -> dict[str, "tf.Tensor"]:
    """Parses a batch of serialized user records.

    Args:
        serialized: string [U], records of ``user_example``.
        feature_names: the float features to parse (``feature/<name>``).
        token_names: the token features to parse (``token/<name>``).
            A name may not be both.

    Returns:
        ``user``, ``validation_position``, ``test_position``: int64 [U];
        ``items``: int64 ragged [U, None]; one float32 ragged [U, None]
        per feature name and one int64 ragged [U, None] per token name,
        keyed by the name (without its prefix).
    """
    import tensorflow as tf

    both = sorted(set(feature_names) & set(token_names))
    if both:
        raise ValueError(
            f"A feature is float or token, not both. Received: {both}"
        )
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
    for name in token_names:
        spec[TOKEN_PREFIX + name] = tf.io.RaggedFeature(
            tf.int64, row_splits_dtype=tf.int64
        )
    parsed = tf.io.parse_example(serialized, spec)
    return {_unprefixed(name): value for name, value in parsed.items()}


def _unprefixed(name: str) -> str:
    """``name`` without ``FEATURE_PREFIX`` or ``TOKEN_PREFIX``."""
    for prefix in (FEATURE_PREFIX, TOKEN_PREFIX):
        if name.startswith(prefix):
            return name[len(prefix) :]
    return name


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
            f"{FORMAT_VERSION} (version 2 lists every file with its "
            "SHA-256, not only the shards). Prepare it again: "
            "`tfrec-tricks prepare ... --output DIR --overwrite`."
        )
    return metadata


def file_manifest(folder: str) -> list[dict]:
    """Every file below ``folder`` but ``metadata.json``: its path
    (relative, ``/``-separated), byte size and SHA-256, sorted by path."""
    manifest = []
    for name in _files_below(folder):
        file = os.path.join(folder, *name.split("/"))
        manifest.append(
            {
                "file": name,
                "bytes": os.path.getsize(file),
                "sha256": file_sha256(file),
            }
        )
    return manifest


def _files_below(folder: str) -> list[str]:
    """Relative paths of the files below ``folder``, ``metadata.json`` (at
    the top) left out, hidden ones included, but for the tool's record of
    what it wrote and its staging marker (``tfrec_tricks.ownership``)."""
    names = []
    for root, _, files in os.walk(folder):
        relative = os.path.relpath(root, folder)
        for entry in files:
            name = entry if relative == "." else f"{relative}/{entry}"
            names.append(name.replace(os.sep, "/"))
    own = (ownership.RECORD_FILE, ownership.STAGING_MARKER)
    return sorted(
        name
        for name in names
        if name != METADATA_FILE and not name.startswith(own)
    )


def _listed_files(path: str, metadata: dict) -> list[dict]:
    """``metadata["files"]``, checked to be a list of file entries inside
    ``path`` that includes every shard."""
    files = metadata.get("files")
    where = os.path.join(path, METADATA_FILE)
    if not isinstance(files, list) or not all(
        isinstance(entry, dict)
        and isinstance(entry.get("file"), str)
        and isinstance(entry.get("bytes"), int)
        and isinstance(entry.get("sha256"), str)
        and not entry["file"].startswith("/")
        and ".." not in entry["file"].split("/")
        for entry in files
    ):
        raise DataError(
            f"{where}: 'files' must list every file of the dataset with its "
            "'file', 'bytes' and 'sha256'. Prepare the dataset again."
        )
    listed = {entry["file"] for entry in files}
    unlisted = sorted(
        shard["file"]
        for shard in metadata.get("shards", [])
        if shard.get("file") not in listed
    )
    if unlisted:
        raise DataError(
            f"{where}: shards {unlisted} are not in its 'files'. Prepare the "
            "dataset again."
        )
    return files


def check_files(path: str, metadata: dict, verify_hashes: bool = True) -> None:
    """Refuses a folder whose files differ from ``metadata.json``'s list.

    Every listed file (shards, vocabulary, statistics, item graph, item
    features, token features) must be there with its size and, with
    ``verify_hashes``, its SHA-256 (a second of reading per GB); a file
    the list does not name is refused too.

    Raises:
        DataError: naming the file and what differs.
    """
    files = _listed_files(path, metadata)
    for entry in files:
        name = entry["file"]
        file = os.path.join(path, *name.split("/"))
        if not os.path.isfile(file):
            raise DataError(
                f"{path!r}: {name} listed in {METADATA_FILE} is missing "
                "(deleted or moved after preparation). Prepare the dataset "
                "again."
            )
        size = os.path.getsize(file)
        if size != entry["bytes"]:
            raise DataError(
                f"{file}: {size} bytes, {METADATA_FILE} says "
                f"{entry['bytes']}: {name} was changed or replaced after "
                "preparation. Prepare the dataset again."
            )
        if verify_hashes and file_sha256(file) != entry["sha256"]:
            raise DataError(
                f"{file}: its SHA-256 differs from {METADATA_FILE}'s: {name} "
                "was changed or replaced after preparation. Prepare the "
                "dataset again."
            )
    listed = {entry["file"] for entry in files}
    extra = [name for name in _files_below(path) if name not in listed]
    if extra:
        raise DataError(
            f"{path!r} holds files that {METADATA_FILE} does not list: "
            f"{extra}. A prepared dataset holds only what preparation "
            "wrote: move them out, or prepare the dataset again into an "
            "empty folder."
        )
