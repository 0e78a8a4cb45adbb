"""``config_fields``: finite numbers wherever a config comes from."""

import math

import pytest

from tfrec_tricks.config_fields import check_finite


@pytest.mark.parametrize("value", [0.001, 0, -3, 1e38, "2.5", 3.4e38])
def test_check_finite_returns_a_float(value):
    assert check_finite("learning_rate", value) == float(value)


@pytest.mark.parametrize(
    "value, shown",
    [
        (math.inf, "inf"),
        (-math.inf, "-inf"),
        (math.nan, "nan"),
        ("Infinity", "inf"),
        (1e39, "1e+39"),  # inf in float32
        (-1e39, "-1e+39"),
        ("abc", "'abc'"),
        (None, "None"),
    ],
)
def test_check_finite_names_the_option_and_value(value, shown):
    with pytest.raises(ValueError, match="learning_rate must be a finite") as e:
        check_finite("learning_rate", value)
    assert str(e.value).endswith(f"Received: learning_rate={shown}")


@pytest.mark.parametrize("value", [math.inf, -math.inf, math.nan, 1e39])
def test_configs_from_python_refuse_non_finite_numbers(value):
    from tfrec_tricks.models.config import ModelConfig
    from tfrec_tricks.training.train_config import TrainConfig

    with pytest.raises(ValueError, match="learning_rate must be a finite"):
        TrainConfig(learning_rate=value)
    with pytest.raises(ValueError, match="dropout must be a finite"):
        ModelConfig(num_items=10, dropout=value)
    with pytest.raises(ValueError, match="sse_graph_rho must be a finite"):
        ModelConfig(num_items=10, sse_graph_rho=value)


@pytest.mark.parametrize("text", ["inf", "-inf", "nan", "1e39", "-1e400"])
def test_float_flags_refuse_non_finite_numbers(capsys, text):
    from tfrec_tricks.cli.options import positive_float, probability

    for parse in (positive_float, probability):
        with pytest.raises(Exception, match="must be a finite number"):
            parse(text)
