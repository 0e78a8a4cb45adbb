"""Tiny synthetic data for the tuning tests, and a tiny interaction file
with a float and a token feature."""

import pytest
from tuning_helpers import (
    COMPILE,
    FIXED,
    MAX_LEN,
    token_config,
    write_token_interactions,
)

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


@pytest.fixture(scope="session")
def token_file(tmp_path_factory):
    """``write_token_interactions``' file: a float and a token feature."""
    folder = tmp_path_factory.mktemp("tokens")
    return write_token_interactions(folder / "shop.inter")


@pytest.fixture(scope="session")
def token_data(token_file):
    """The search's data of ``token_file``: rating and device kept."""
    from tfrec_tricks.training.training_data import prepare_source

    return prepare_source(token_config(token_file))[1]
