"""Runs the recommendation tests share, trained once per session."""

import pytest

from tests.recommendation.recommend_helpers import train_new_items_run


@pytest.fixture(scope="session")
def new_items_run(tmp_path_factory):
    """A run whose catalogue holds 6 items no user clicked
    (``recommend_helpers.NEW_ITEMS``)."""
    return train_new_items_run(tmp_path_factory.mktemp("new-items"))
