"""A head defined in this file alone (its layer and its spec) trains,
resumes, tunes, exports, serves and recommends: nothing outside this file
knows its name (docs/adding-a-head.md follows this example)."""

import json
import os

import pytest
import tensorflow as tf

from tests.member_checks import (
    assert_resumed,
    assert_serves_what_it_recommends,
    interrupted_and_resumed,
    tuned,
)
from tfrec_tricks.heads import (
    HeadParts,
    HeadSpec,
    register_head,
    unregister_head,
)
from tfrec_tricks.heads.tied_softmax import TiedSoftmax

NAME = "projected_softmax"


@tf.keras.utils.register_keras_serializable(package="my_shop")
class ProjectedSoftmax(TiedSoftmax):
    """The tied softmax with a learned ``d x d`` projection of the query,
    even where the encoder's width is ``d`` already."""

    def __init__(self, output_dim: int, **kwargs) -> None:
        super().__init__(output_dim=output_dim, **kwargs)


class ProjectedSoftmaxSpec(HeadSpec):
    name = NAME
    summary = "h W E^T + b: the tied softmax of a projected query"
    tied_softmax = True

    def build(self, config, hidden):
        head = ProjectedSoftmax(config.embedding_dim, name="projected_head")
        return HeadParts(head, head.projection)

    def parameters(self, config, width):
        return width * config.embedding_dim

    def extension_refusal(self, config):
        return None  # a new item's logit reads its own row and bias only


@pytest.fixture(scope="module")
def head():
    register_head(ProjectedSoftmaxSpec)
    yield NAME
    unregister_head(NAME)


@pytest.fixture(scope="module")
def run(head, tmp_path_factory):
    """A run of the head, interrupted after its first epoch, then resumed
    by the same call."""
    root = tmp_path_factory.mktemp("own-head")
    model = {"head": head}
    return interrupted_and_resumed(root, model)


@pytest.mark.slow
def test_it_trains_and_resumes(run):
    said, result = run
    assert isinstance(result.model.head, ProjectedSoftmax)
    assert_resumed(said, result)
    with open(os.path.join(result.run_dir, "run.json")) as handle:
        assert json.load(handle)["status"] == "finished"
    with open(os.path.join(result.run_dir, "config.json")) as handle:
        assert json.load(handle)["model"]["head"] == NAME


@pytest.mark.slow
def test_it_recommends_and_serves_what_it_recommends(run, tmp_path):
    assert_serves_what_it_recommends(run[1].run_dir, tmp_path)


@pytest.mark.slow
def test_a_search_tunes_it(head, tmp_path, monkeypatch):
    result = tuned({"head": head}, tmp_path, monkeypatch)
    assert result.best_config["model"]["head"] == head
