"""Tiny synthetic data for the tuning tests."""

import pytest
from tuning_helpers import COMPILE, FIXED, MAX_LEN

from tfrec_tricks.data import load_source, prepare
from tfrec_tricks.tuning import SequentialRetrievalHyperModel


@pytest.fixture(scope="session")
def source():
    return load_source(
        "synthetic",
        synthetic_options={"num_users": 60, "num_items": 40, "num_clusters": 4},
    )


@pytest.fixture(scope="session")
def data(source):
    return prepare(source.interactions, max_len=MAX_LEN)


@pytest.fixture
def hypermodel(data, source):
    return SequentialRetrievalHyperModel(
        data,
        item_graph=source.item_graph,
        fixed=FIXED,
        compile_options=COMPILE,
    )
