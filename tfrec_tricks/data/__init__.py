"""Data: the synthetic default, loaders, TFDS, preparation and tf.data."""

from tfrec_tricks.data.datasets import SOURCES, Source, load_source
from tfrec_tricks.data.interactions import Interactions
from tfrec_tricks.data.loaders import FORMATS, load_file
from tfrec_tricks.data.preparation import (
    InMemoryDataset,
    SequenceExamples,
    Vocabulary,
    prepare,
)

__all__ = [
    "FORMATS",
    "Interactions",
    "InMemoryDataset",
    "SOURCES",
    "SequenceExamples",
    "Source",
    "Vocabulary",
    "load_file",
    "load_source",
    "prepare",
]
