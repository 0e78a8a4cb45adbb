"""A run's data, in memory or streamed from a prepared dataset on disk.

``train`` asks the same things of both: the vocabulary and statistics the
model is built from, and batches of each split. In memory (the default),
the source is loaded and prepared in the process (``prepare``); with
``TrainConfig.prepared`` the examples are formed on the fly from the
shards a ``tfrec-tricks prepare`` wrote (``OnDiskDataset``).
"""

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np
import tensorflow as tf

from tfrec_tricks.data import InMemoryDataset, Source, load_source, prepare
from tfrec_tricks.data.in_memory_item_features import with_item_features
from tfrec_tricks.data.item_features.item_file import (
    ItemFeatureTable,
    read_item_features,
)
from tfrec_tricks.data.item_features.movielens import (
    MOVIELENS_METADATA,
    movielens_item_features,
)
from tfrec_tricks.data.item_features.tfds_genres import load_tfds_item_features
from tfrec_tricks.data.prepared.on_disk_dataset import OnDiskDataset
from tfrec_tricks.data.tf_data_pipeline import make_dataset
from tfrec_tricks.training.feature_selection import (
    ALL_FEATURES,
    select_features,
)

# Re-exported: named without TensorFlow in run_inputs (the command line
# checks its outputs against them before TensorFlow loads).
from tfrec_tricks.training.run_inputs import (
    data_files as data_files,
)
from tfrec_tricks.training.run_inputs import (
    input_paths as input_paths,
)
from tfrec_tricks.training.run_inputs import (
    item_feature_files as item_feature_files,
)
from tfrec_tricks.training.train_config import TrainConfig


@dataclasses.dataclass
class TrainingData:
    """What a run reads: model inputs and batches of each split.

    Attributes:
        prepared: the ``InMemoryDataset`` (in memory) or ``OnDiskDataset``
            (on disk) the model is built from (``from_data``).
        item_graph: [E, 2] raw item ids, or None.
        description: lines saying what was loaded.
    """

    prepared: Any
    item_graph: np.ndarray | None
    description: list[str]

    @property
    def on_disk(self) -> bool:
        return isinstance(self.prepared, OnDiskDataset)

    @property
    def num_items(self) -> int:
        return self.prepared.num_items

    @property
    def vocabulary(self):
        return self.prepared.vocabulary

    def num_examples(self, split: str) -> int:
        """Prefix examples of ``split``."""
        if self.on_disk:
            return self.prepared.num_examples(split)
        return len(getattr(self.prepared, split))

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
        """Batches of ``split`` (see ``make_dataset`` for the options).

        ``input_context`` (multi-worker training) reads a share of the
        data: a share of the shards on disk, every
        ``num_input_pipelines``-th batch in memory.
        """
        if self.on_disk:
            return self.prepared.batches(
                split,
                batch_size,
                shuffle=shuffle,
                seed=seed,
                bucket_by_length=bucket_by_length,
                every_position=every_position,
                input_context=input_context,
                window_stride=window_stride,
            )
        dataset = make_dataset(
            getattr(self.prepared, split),
            batch_size,
            shuffle=shuffle,
            seed=seed,
            bucket_by_length=bucket_by_length,
            every_position=every_position,
            window_stride=window_stride,
        )
        if input_context is not None and input_context.num_input_pipelines > 1:
            dataset = dataset.shard(
                input_context.num_input_pipelines,
                input_context.input_pipeline_id,
            )
        return dataset


def load_training_data(config: TrainConfig) -> TrainingData:
    """Loads ``config``'s data: prepared on disk, or prepared here."""
    if config.prepared:
        dataset = OnDiskDataset(config.prepared)
        # Refuses a name the dataset does not have; its item features
        # apply whichever of them are named (``check_item_features``); its
        # token features are selected as in memory (``prepare_in_memory``).
        selection = select_features(
            config.model.value("features"),
            dataset.feature_names,
            dataset.item_feature_names,
            token_available=dataset.token_feature_names,
            item_source=f"the prepared dataset {config.prepared}",
        )
        dataset = dataset.select_token_features(selection.token)
        description = [f"Prepared: {dataset.summary()}"]
        return TrainingData(
            dataset,
            dataset.item_graph(),
            description + item_feature_lines(dataset),
        )
    source, data = prepare_in_memory(config)
    description = [f"Data: {source.interactions.summary()}"]
    if source.duplicates is not None:
        description.append(source.duplicates.message())
    description.append(f"Prepared: {data.summary()}")
    description += item_feature_lines(data)
    return TrainingData(data, source.item_graph, description)


def item_feature_lines(data: InMemoryDataset | OnDiskDataset) -> list[str]:
    """What the run says of its item features: one line per feature (kind,
    vocabulary, coverage), the cold items and the items without a row;
    and one line per categorical per-interaction feature."""
    lines = [
        f"Interaction feature {row['name']}: {row['kind']}, "
        f"{row['vocabulary_size']:,} ids (padding and OOV included), "
        f"{row['coverage']:.1%} of interactions have a value"
        for row in token_feature_facts(data).get("interaction_features", [])
    ]
    facts = item_feature_facts(data)
    if not facts:
        return lines
    for row in facts["item_features"]:
        vocabulary = (
            f", {row['vocabulary_size']:,} ids (padding and OOV included)"
            if row["vocabulary_size"]
            else ""
        )
        lines.append(
            f"Item feature {row['name']}: {row['kind']}{vocabulary}, "
            f"{row['coverage']:.1%} of items have a value"
        )
    lines.append(
        f"Items: {facts['cold_items']:,} in no training example (cold: "
        "ranked by their attributes), "
        f"{facts['items_without_attributes']:,} without an attribute row"
    )
    return lines


def item_feature_facts(data: InMemoryDataset | OnDiskDataset) -> dict:
    """The data's item features, for the run's summary and
    ``metrics.json``: each one's kind, vocabulary size, width and coverage
    (``item_features``); the cold items, in the catalogue but in no
    training example (``cold_items``); the items without an attribute row
    (``items_without_attributes``). Empty without item features."""
    features = data.item_features
    if features is None:
        return {}
    return {
        "item_features": features.summary_rows(),
        "cold_items": int((~data.trained_items[1:]).sum()),
        "items_without_attributes": int((~features.has_row[1:]).sum()),
    }


def token_feature_facts(data: InMemoryDataset | OnDiskDataset) -> dict:
    """The data's categorical per-interaction features, for the run's
    summary and ``metrics.json`` (``interaction_features``: each one's
    name, kind, vocabulary size and coverage). Empty without."""
    specs = getattr(data, "token_features", ())
    if not specs:
        return {}
    return {"interaction_features": [spec.summary_row() for spec in specs]}


def prepare_source(config: TrainConfig) -> tuple[Source, InMemoryDataset]:
    """Loads ``config``'s data source and prepares it in memory, every
    per-interaction feature kept (float and token) and no item attribute.

    What ``prepare_in_memory`` selects from, and what a search prepares
    once: each trial keeps the features its ``features`` names
    (``select_token_features``) and joins the item attributes it fuses.

    Returns:
        The loaded ``Source`` (interactions, optional item graph) and the
        ``InMemoryDataset``.

    Raises:
        DataError: the source cannot be read.

    Example:

    >>> source, data = prepare_source(
    ...     TrainConfig(synthetic_users=30, synthetic_items=40, max_len=5))
    >>> data.feature_names, data.token_feature_names, data.item_features
    (['time_gap'], [], None)
    """
    source = load_source(
        config.data,
        data_path=config.data_path,
        file_format=config.file_format,
        synthetic_options={
            "num_users": config.synthetic_users,
            "num_items": config.synthetic_items,
            "seed": config.seed,
        },
        tfds_data_dir=config.tfds_data_dir,
        tfds_manual_dir=config.tfds_manual_dir,
        drop_duplicates=config.drop_duplicates,
    )
    data = prepare(
        source.interactions,
        max_len=config.max_len,
        min_user_interactions=config.min_user_interactions,
        min_item_interactions=config.min_item_interactions,
        split=config.split,
        min_feature_count=config.min_feature_count,
    )
    return source, data


def prepare_in_memory(config: TrainConfig) -> tuple[Source, InMemoryDataset]:
    """Loads ``config``'s data source and prepares it in memory: the
    per-interaction features ``--features`` selects, joined with the item
    attributes the run fuses.

    Returns:
        The loaded ``Source`` (interactions, optional item graph) and the
        ``InMemoryDataset``.
    """
    source, data = prepare_source(config)
    position_names = [*data.feature_names, *data.token_feature_names]
    table = item_feature_table(config, position_names)
    selection = select_features(
        config.model.value("features"),
        data.feature_names,
        table.names() if table is not None else [],
        items_by_default=config.item_features is not None,
        token_available=data.token_feature_names,
        item_source=table.source if table is not None else "",
    )
    data = data.select_token_features(selection.token)
    if selection.item:
        data = with_item_features(
            data, table.select(selection.item), config.min_feature_count
        )
    return source, data


def item_feature_table(
    config: TrainConfig, position_names: Sequence[str] | None = None
) -> ItemFeatureTable | None:
    """The item attributes ``config``'s run can read: ``--item-features``,
    else a built-in dataset's metadata when ``--features`` names a feature
    (``movielens_item_features``; TFDS MovieLens: its genres,
    ``load_tfds_item_features``), else None.

    ``position_names``, the data's per-interaction features when known:
    the metadata is read only for a name that is none of them (or
    ``all``), so ``--features time_gap`` never needs the metadata file.
    """
    if config.item_features is not None:
        return read_item_features(config.item_features)
    requested = config.model.value("features")
    if position_names is not None and ALL_FEATURES not in requested:
        requested = [n for n in requested if n not in position_names]
    if not requested:
        return None
    if config.data in MOVIELENS_METADATA:
        return movielens_item_features(config.data, config.data_path)
    if config.data.startswith("tfds:"):
        return load_tfds_item_features(
            config.data[len("tfds:") :], config.tfds_data_dir
        )
    return None
