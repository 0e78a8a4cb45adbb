"""The sequential retrieval model's base class, by the Keras in use.

One model definition, two Keras (docs/keras-versions.md):

- under tf-keras (``TF_USE_LEGACY_KERAS=1``, the default): ``tfrs.Model``,
  exactly as before, so the TFRS path computes the same numbers;
- under Keras 3 (TensorFlow backend), where TFRS 0.7.7 cannot be imported:
  ``Keras3RetrievalModel``, a ``keras.Model`` with ``tfrs.Model``'s
  training and test steps.

The choice is made once, when this module is imported: ``tf.keras`` is
resolved by then (``tfrec_tricks.models`` chose it, see
``keras_version.choose_model_keras``) and cannot change in the process.
"""

from tfrec_tricks.keras_version import keras_3_in_use


def retrieval_base() -> type:
    """The base class of a model trained through its ``compute_loss``.

    Returns:
        ``tfrs.Model`` under tf-keras, ``Keras3RetrievalModel`` under
        Keras 3. Each is imported only under its own Keras: TFRS raises
        ImportError under Keras 3, and the tf-keras path does not import
        ``keras3_retrieval_model``.
    """
    if keras_3_in_use():
        from tfrec_tricks.models.keras3_retrieval_model import (
            Keras3RetrievalModel,
        )

        return Keras3RetrievalModel
    import tensorflow_recommenders as tfrs

    return tfrs.Model


#: The base of ``SequentialRetrievalModel`` in this process.
RetrievalBase = retrieval_base()
