"""tfrec_tricks: four modelling techniques for sequential recommenders.

The package root stays light: it imports no TensorFlow. Import what you need:

* ``tfrec_tricks.layers``: Keras layers; they work under tf-keras (Keras 2)
  and under Keras 3 with the TensorFlow backend.
* ``tfrec_tricks.models``: TFRS retrieval models; they need tf-keras, so set
  ``TF_USE_LEGACY_KERAS=1`` before TensorFlow is imported (the CLI and the
  examples do this for you).
* ``tfrec_tricks.data`` and ``tfrec_tricks.evaluation``: data and
  evaluation.
"""

__version__ = "0.1.0"
