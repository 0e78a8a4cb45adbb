"""Data: the synthetic default, loaders, TFDS, preparation and tf.data."""

from tfrec_tricks.data.item_features.encoding import (
    ItemFeatures,
    ItemFeatureSpec,
    cold_item_names,
    encode_item_features,
)
from tfrec_tricks.data.item_features.item_file import (
    FEATURE_KINDS,
    ItemFeatureTable,
    read_item_features,
)
from tfrec_tricks.data.item_features.movielens import movielens_item_features
from tfrec_tricks.data.item_features.ragged_rows import RaggedRows
from tfrec_tricks.data.preparation import (
    InMemoryDataset,
    SequenceExamples,
    Vocabulary,
    prepare,
)
from tfrec_tricks.data.sources.interactions import Interactions
from tfrec_tricks.data.sources.loaders import FORMATS, load_file
from tfrec_tricks.data.sources.named_sources import SOURCES, Source, load_source

__all__ = [
    "FEATURE_KINDS",
    "FORMATS",
    "Interactions",
    "InMemoryDataset",
    "ItemFeatureSpec",
    "ItemFeatureTable",
    "ItemFeatures",
    "RaggedRows",
    "SOURCES",
    "SequenceExamples",
    "Source",
    "Vocabulary",
    "cold_item_names",
    "encode_item_features",
    "load_file",
    "load_source",
    "movielens_item_features",
    "prepare",
    "read_item_features",
]
