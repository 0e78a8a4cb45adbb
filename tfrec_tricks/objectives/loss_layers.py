"""The sampled objectives' loss layers, by the Keras in use.

The in-batch sampled softmax and the K sampled negatives take three
weightless layers from ``tfrs.layers.loss`` under tf-keras. TFRS cannot be
imported under Keras 3; there they come from keras-rs (the Keras team's
Keras 3 recommenders library, pinned to 0.4), with one exception:

- logQ correction: ``tfrs.layers.loss.SamplingProbablityCorrection``;
  under Keras 3 ``keras_rs.layers.SamplingProbabilityCorrection``.
- Accidental hits: ``tfrs.layers.loss.RemoveAccidentalHits``; under
  Keras 3 this package's ``RemoveAccidentalHits``
  (``objectives.remove_accidental_hits``): keras-rs 0.4's removes nothing.
- Hard negatives: ``tfrs.layers.loss.HardNegativeMining``; under Keras 3
  ``keras_rs.layers.HardNegativeMining``.

Each factory returns a callable with TFRS's arguments and results, so an
objective calls it the same way under either Keras. Under tf-keras they
are TFRS's own layers, created as before: the TFRS path is unchanged.
"""

from collections.abc import Callable

from tfrec_tricks.keras_version import keras_3_in_use


def sampling_probability_correction() -> Callable:
    """``(logits, candidate_sampling_probability) -> logits``: subtracts
    the log of each candidate's sampling probability (clipped to
    [1e-6, 1])."""
    if keras_3_in_use():
        import keras_rs

        return keras_rs.layers.SamplingProbabilityCorrection()
    import tensorflow_recommenders as tfrs

    return tfrs.layers.loss.SamplingProbablityCorrection()


def remove_accidental_hits() -> Callable:
    """``(labels, logits, candidate_ids) -> logits``: a negative with the
    positive's id is taken out of the row's softmax."""
    if keras_3_in_use():
        from tfrec_tricks.objectives.remove_accidental_hits import (
            RemoveAccidentalHits,
        )

        return RemoveAccidentalHits()
    import tensorflow_recommenders as tfrs

    return tfrs.layers.loss.RemoveAccidentalHits()


def hard_negative_mining(num_hard_negatives: int) -> Callable:
    """``(logits, labels) -> (logits, labels)``: each row's positive and
    its ``num_hard_negatives`` highest-scored negatives.

    Args:
        num_hard_negatives: int. How many negatives to keep per row.
    """
    if keras_3_in_use():
        import keras_rs

        return keras_rs.layers.HardNegativeMining(num_hard_negatives)
    import tensorflow_recommenders as tfrs

    return tfrs.layers.loss.HardNegativeMining(num_hard_negatives)
