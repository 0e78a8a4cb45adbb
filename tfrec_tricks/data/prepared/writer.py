"""Writing a prepared dataset (``prepared.format``) from user sequences."""

import json
import math
import os
from collections.abc import Sequence

import numpy as np
import tensorflow as tf

import tfrec_tricks
from tfrec_tricks.atomic_files import publish_directory
from tfrec_tricks.data.in_memory_dataset import Vocabulary
from tfrec_tricks.data.interaction_tokens import (
    InteractionTokenSpec,
    interaction_token_features,
    specs_json,
)
from tfrec_tricks.data.prepared import format as fmt
from tfrec_tricks.data.prepared.item_features import (
    ItemFeatureRequest,
    JoinedItemFeatures,
    item_mask,
    join_item_features,
    trained_item_ids,
    write_item_features,
)
from tfrec_tricks.data.training_statistics import (
    TrainingStatistics,
    training_statistics,
)
from tfrec_tricks.data.user_sequences import UserSequences

# Interactions per shard when the shard count is not given.
INTERACTIONS_PER_SHARD = 1_000_000
MIN_SHARDS = 4


def default_num_shards(num_interactions: int) -> int:
    """Shards for ``num_interactions``: at least 4 (workers read shards)."""
    return max(MIN_SHARDS, math.ceil(num_interactions / INTERACTIONS_PER_SHARD))


def split_counts(
    train_ends: np.ndarray,
    validation_positions: np.ndarray,
    test_positions: np.ndarray,
) -> dict:
    """The histograms ``OnDiskDataset`` sizes its batches from.

    ``train_ends``: how many users have their last training target at each
    position; ``validation_positions`` / ``test_positions``: how many
    users have their held-out target at each position (users without one
    left out).
    """
    return {
        "train_ends": fmt.count_histogram(train_ends[train_ends > 0]),
        "validation_positions": fmt.count_histogram(
            validation_positions[validation_positions >= 0]
        ),
        "test_positions": fmt.count_histogram(
            test_positions[test_positions >= 0]
        ),
    }


def merge_split_counts(parts: list[dict]) -> dict:
    """Sums ``split_counts`` of disjoint sets of users."""
    merged = {}
    for part in parts:
        for name, histogram in part.items():
            target = merged.setdefault(name, {})
            for value, count in histogram.items():
                target[value] = target.get(value, 0) + count
    return {
        name: dict(sorted(histogram.items(), key=lambda kv: int(kv[0])))
        for name, histogram in merged.items()
    }


def write_dataset_files(
    folder: str,
    vocabulary: Vocabulary,
    statistics: TrainingStatistics,
    counts: dict,
    options: dict,
    feature_names: list[str],
    num_interactions: int,
    engine: str,
    item_graph: np.ndarray | None = None,
    shard_users: dict[str, int] | None = None,
    item_features: JoinedItemFeatures | None = None,
    token_features: Sequence[InteractionTokenSpec] = (),
) -> dict:
    """Writes the vocabulary, statistics and, last, ``metadata.json``.

    The shards must already be in ``folder``. ``metadata.json`` lists every
    file of ``folder`` (shards, vocabulary, statistics, item graph, item
    features, token features, and anything else there) with its size and
    SHA-256, and each shard's user count (``shard_users``) when known.
    Both engines end here.

    With ``item_features`` (``join_item_features``' result, which
    ``vocabulary`` and ``statistics`` must be of), their files are written
    too (``write_item_features``) and ``metadata.json`` names the item
    features (``item_feature_names``). With ``token_features`` (the specs
    of the token columns the shards hold), ``interaction_tokens.json`` is
    written (``specs_json``) and ``metadata.json`` names them
    (``token_feature_names``, empty without).

    Returns:
        The metadata written.
    """
    with open(os.path.join(folder, fmt.VOCABULARY_FILE), "w") as handle:
        handle.write(vocabulary.to_json())
    with open(os.path.join(folder, fmt.STATISTICS_FILE), "w") as handle:
        json.dump(statistics.to_dict(), handle)
    if item_graph is not None:
        with open(os.path.join(folder, fmt.ITEM_GRAPH_FILE), "w") as handle:
            json.dump([[str(a), str(b)] for a, b in item_graph], handle)
    if item_features is not None:
        write_item_features(folder, item_features)
    if token_features:
        path = os.path.join(folder, fmt.INTERACTION_TOKENS_FILE)
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(specs_json(token_features))
    shards = sorted(f for f in os.listdir(folder) if f.endswith(".tfrecord"))
    shard_users = shard_users or {}
    # Everything the folder holds now, shards included: a reader refuses
    # a missing, changed or extra file (``prepared_format.check_files``).
    files = fmt.file_manifest(folder)
    listed = {entry["file"]: entry for entry in files}
    metadata = {
        "format": fmt.FORMAT,
        "format_version": fmt.FORMAT_VERSION,
        "tfrec_tricks_version": tfrec_tricks.__version__,
        "engine": engine,
        "options": options,
        "num_items": vocabulary.num_items,
        "num_users": len(vocabulary.users),
        "num_interactions": int(num_interactions),
        "feature_names": sorted(feature_names),
        "item_feature_names": (
            item_features.names if item_features is not None else []
        ),
        "token_feature_names": sorted(spec.name for spec in token_features),
        **counts,
        "shards": [
            {
                "file": name,
                "users": shard_users.get(name),
                "bytes": listed[name]["bytes"],
                "sha256": listed[name]["sha256"],
            }
            for name in shards
        ],
        "files": files,
    }
    with open(os.path.join(folder, fmt.METADATA_FILE), "w") as handle:
        json.dump(metadata, handle, indent=1)
    return metadata


def write_prepared(
    sequences: UserSequences,
    output: str,
    options: dict,
    num_shards: int | None = None,
    overwrite: bool = False,
    item_graph: np.ndarray | None = None,
    item_features: ItemFeatureRequest | None = None,
) -> str:
    """Writes ``sequences`` as a prepared dataset folder ``output``.

    Args:
        sequences: the ``UserSequences`` to write.
        output: str. The folder; written aside and renamed when complete.
        options: dict. The preparation options (``max_len``, ``split``,
            the filters, the source); ``options["max_len"]`` sets the
            statistics' history length, ``options["min_feature_count"]``
            (default 1) the training interactions a value of a token
            column needs (``interaction_token_features``: every token
            column of ``sequences`` is encoded and written).
        num_shards: int. TFRecord files; default ``default_num_shards``.
            Users are cut into contiguous blocks of about equal size.
        overwrite: bool. Replace an existing ``output``.
        item_graph: array [E, 2] of raw item ids (``Source.item_graph``),
            or None.
        item_features: ``ItemFeatureRequest`` or None. The item
            attributes to join (``join_item_features``): cold items join
            the vocabulary, the features are written beside it.

    Returns:
        ``output``.

    Raises:
        ValueError: ``item_features.select`` refuses the features asked
            for (before any shard is written).
    """
    num_shards = num_shards or default_num_shards(len(sequences.items))
    if num_shards <= 0:
        raise ValueError(f"num_shards must be positive. Received: {num_shards}")
    if os.path.exists(output) and not overwrite:
        raise FileExistsError(
            f"{output!r} already exists; pass --overwrite to replace it."
        )

    specs, token_ids = interaction_token_features(
        sequences, options.get("min_feature_count", 1)
    )

    def write(folder: str) -> None:
        # Joined first: a refused --features writes no shard.
        vocabulary = Vocabulary(
            items=sequences.item_names, users=sequences.user_names
        )
        trained = None
        if item_features is not None and item_features.table is not None:
            trained = item_mask(
                trained_item_ids(sequences), vocabulary.num_items
            )
        joined = join_item_features(
            item_features,
            # Every per-interaction feature is prepared: --features may
            # name any of them (token columns too) beside item features.
            sorted(sequences.features),
            vocabulary,
            training_statistics(sequences, options["max_len"]),
            trained,
            token_names=[spec.name for spec in specs],
        )
        shard_users = {}
        ends = np.cumsum(sequences.lengths)
        # Shard boundaries at users, about equal interactions each.
        cuts = np.searchsorted(
            ends, np.linspace(0, ends[-1], num_shards + 1)[1:-1], side="left"
        )
        bounds = np.r_[0, cuts, sequences.num_users]
        for index in range(num_shards):
            name = fmt.shard_name(index, num_shards)
            first, last = int(bounds[index]), int(bounds[index + 1])
            _write_shard(
                os.path.join(folder, name), sequences, token_ids, first, last
            )
            shard_users[name] = last - first
        counts = split_counts(
            sequences.train_ends,
            sequences.validation_positions,
            sequences.test_positions,
        )
        write_dataset_files(
            folder,
            joined.vocabulary,
            joined.statistics,
            counts,
            options,
            list(sequences.features),
            len(sequences.items),
            "local",
            item_graph,
            shard_users,
            joined,
            specs,
        )

    return publish_directory(
        output, write, replace=overwrite, kind=fmt.PREPARED_KIND
    )


def _write_shard(
    path: str,
    sequences: UserSequences,
    token_ids: dict[str, np.ndarray],
    first: int,
    last: int,
):
    with tf.io.TFRecordWriter(path) as writer:
        for user in range(first, last):
            start = sequences.starts[user]
            rows = slice(start, start + sequences.lengths[user])
            writer.write(
                fmt.user_example(
                    user,
                    sequences.items[rows],
                    sequences.validation_positions[user],
                    sequences.test_positions[user],
                    {n: v[rows] for n, v in sequences.features.items()},
                    {n: v[rows] for n, v in token_ids.items()},
                )
            )
