"""model_parts: candidate probabilities, feature checks and encoders, and
the head each config names."""

import numpy as np
import pytest

from tfrec_tricks.layers import MixtureOfSoftmax, SoftmaxCPR, TiedSoftmax
from tfrec_tricks.models import ModelConfig
from tfrec_tricks.models.model_parts import (
    candidate_probabilities,
    checked_feature_statistics,
    feature_encoders,
    output_head,
)


def test_candidate_probabilities_are_the_normalised_counts():
    counts = np.random.default_rng(0).integers(0, 9, size=12)
    counts[3] = 1  # a positive sum
    expected = [c / sum(counts.tolist()) for c in counts.tolist()]
    np.testing.assert_allclose(
        candidate_probabilities(12, counts), expected, rtol=1e-6
    )
    uniform = candidate_probabilities(5, None)
    assert uniform.dtype == np.float32
    np.testing.assert_allclose(uniform, [0.25] * 5)


@pytest.mark.parametrize("counts", [[1, 2, 3], [0, 0, 0, 0], [1, -1, 2, 2]])
def test_candidate_counts_that_cannot_be_normalised_are_refused(counts):
    with pytest.raises(ValueError, match="4 non-negative counts"):
        candidate_probabilities(4, counts)


def test_feature_statistics_must_name_features_of_the_config():
    config = ModelConfig(num_items=10, features=("time_gap",))
    assert checked_feature_statistics(config, None) == {}
    given = {"time_gap": (1.0, 4.0)}
    checked = checked_feature_statistics(config, given)
    assert checked == given and checked is not given
    with pytest.raises(ValueError, match=r"Received: \['rating'\]"):
        checked_feature_statistics(config, {"rating": (0.0, 1.0)})


def test_feature_encoders_standardise_with_the_statistics():
    config = ModelConfig(num_items=10, features=("time_gap", "rating"))
    encoders = feature_encoders(config, {"rating": (3.0, 2.0)})
    assert sorted(encoders) == ["rating", "time_gap"]
    rating = encoders["rating"].get_config()
    assert (rating["normalization"], rating["mean"], rating["variance"]) == (
        "standardize",
        3.0,
        2.0,
    )
    gap = encoders["time_gap"].get_config()
    assert gap["normalization"] == "log1p_standardize"  # a LOG1P feature
    assert gap["missing"] == "learned"


@pytest.mark.parametrize(
    "head, kind, projected",
    [
        ("softmax", TiedSoftmax, True),
        ("softmax_no_dup", TiedSoftmax, True),
        ("cpr", SoftmaxCPR, False),
        ("mos", MixtureOfSoftmax, False),
    ],
)
def test_output_head_is_the_one_the_config_names(head, kind, projected):
    config = ModelConfig(num_items=200, head=head, embedding_dim=8)
    layer, projection, base_weight = output_head(config, hidden=16)
    assert type(layer) is kind
    assert (projection is not None) == projected
    assert base_weight == (config.cpr_base_loss if head == "cpr" else 0.0)
    if kind is TiedSoftmax:
        assert layer.exclude_history == (head == "softmax_no_dup")
        _, same_width, _ = output_head(config, hidden=8)
        assert same_width is None  # no projection when widths agree


TOKENS = ({"name": "device", "vocabulary_size": 4, "vocabulary": ["a", "b"]},)


def test_token_features_get_an_embedding_after_the_float_encoders():
    config = ModelConfig(
        num_items=10,
        embedding_dim=8,
        features=("time_gap",),
        token_features=TOKENS,
    )
    encoders = feature_encoders(config, {})
    assert list(encoders) == ["time_gap", "device"]
    device = encoders["device"]
    assert device.vocabulary_size == 4 and device.output_dim == 8
    # Ids come as float32 [B, L, 1], as the model passes every feature;
    # 0 (no value, padding) adds nothing.
    vectors = device(np.array([[[2.0], [0.0]]], np.float32)).numpy()
    np.testing.assert_allclose(vectors[0, 0], device.embeddings.numpy()[2])
    assert not vectors[0, 1].any()
    assert config.position_inputs == ("time_gap", "device")


def test_a_config_without_token_features_builds_what_it_built_before():
    config = ModelConfig(num_items=10, embedding_dim=8, features=("time_gap",))
    assert list(feature_encoders(config, {})) == ["time_gap"]
    assert config.position_inputs == ("time_gap",)


@pytest.mark.parametrize(
    "token_features",
    [
        ({"name": "time_gap", "vocabulary_size": 3},),
        ({"name": "device", "vocabulary_size": 1},),
        ({"name": "device", "vocabulary_size": 3},) * 2,
    ],
)
def test_bad_token_features_are_refused(token_features):
    with pytest.raises(ValueError, match="token_features"):
        ModelConfig(
            num_items=10, features=("time_gap",), token_features=token_features
        )
