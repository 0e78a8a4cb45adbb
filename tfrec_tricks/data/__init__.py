"""Data: from interaction files to the examples a model trains on.

Sub-packages, by what they hold:

- ``sources``: the readers of interactions (files, TFDS MovieLens, the
  synthetic default, the sources a run names), each ending in an
  ``Interactions`` table;
- ``item_features``: the items' attributes (the ``.item`` file, the
  built-in datasets' metadata), encoded against a catalogue;
- ``prepared``: the prepared dataset on disk (its format, its writer,
  ``OnDiskDataset``) and its item features;
- ``beam``: the Apache Beam preparation engine, which writes the same
  prepared dataset.

At the top, what every engine and both dataset kinds share:
``user_sequences`` (each user's interactions once, the leave-one-out
split, the id rules), ``interaction_tokens`` (the token columns of the
interactions), ``training_statistics`` (what a model needs from the
training data besides the examples), ``in_memory_dataset`` (``prepare``:
the prefix examples in memory) with ``in_memory_item_features`` (item
attributes joined to it), and the forms the examples are trained in:
``prefix_merging``, ``train_windows`` and ``tf_data_pipeline`` (the
``tf.data`` batches). The names below are the package's public ones.
"""

from tfrec_tricks.data.in_memory_dataset import (
    InMemoryDataset,
    SequenceExamples,
    Vocabulary,
    prepare,
)
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
