"""Test helpers shared by the project's tests (and usable by users')."""

from tfrec_tricks.testing.test_case import (
    assert_saved_model_in_fresh_process,
    run_layer_test,
)

__all__ = ["assert_saved_model_in_fresh_process", "run_layer_test"]
