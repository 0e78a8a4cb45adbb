"""The files and folders a run's data is read from, named without reading
them and without TensorFlow: what ``prepare`` records the SHA-256s of,
what identifies a run's data, and what no output may be, contain or lie
inside. The command line checks its outputs against them before
TensorFlow loads (``cli.prepare.check``, ``cli.ablation.check``)."""

import os

from tfrec_tricks.data.item_features.movielens import (
    MOVIELENS_METADATA,
    metadata_files,
)
from tfrec_tricks.data.prepared.format import (
    METADATA_FILE,
    STATISTICS_FILE,
    VOCABULARY_FILE,
)
from tfrec_tricks.data.sources.named_sources import source_files
from tfrec_tricks.training.train_config import TrainConfig


def item_feature_files(config: TrainConfig) -> list[str]:
    """The files ``item_feature_table`` reads for ``config`` (none when it
    reads none): what ``prepare`` records the SHA-256s of."""
    if config.item_features is not None:
        return [config.item_features]
    if config.data in MOVIELENS_METADATA and config.model.value("features"):
        return metadata_files(config.data, config.data_path)
    return []


def data_files(config: TrainConfig) -> list[str]:
    """The files that identify ``config``'s data in a run's fingerprint.

    A prepared dataset's ``metadata.json`` holds the SHA-256s of its
    shards, of its item features and of the ``.item`` file they were
    encoded from, so it, the vocabulary and the statistics identify all of
    it.
    """
    if config.prepared:
        return [
            os.path.join(config.prepared, name)
            for name in (METADATA_FILE, VOCABULARY_FILE, STATISTICS_FILE)
        ]
    files = source_files(config.data, config.data_path, config.tfds_manual_dir)
    if config.item_features is not None:
        files.append(config.item_features)
    return files


def input_paths(config: TrainConfig) -> list[str]:
    """Every file and folder ``config``'s data is read from: what no
    output of the run may be, contain or lie inside
    (``output_folders.check_target``)."""
    folders = [config.prepared, config.tfds_data_dir, config.tfds_manual_dir]
    return [*data_files(config), *(f for f in folders if f)]
