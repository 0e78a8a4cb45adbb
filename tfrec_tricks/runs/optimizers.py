"""``--optimizer``: which Keras optimizer trains a run.

Adam (the papers' choice) updates its moments of every row of the item
table at every step, also when the gradient holds only the batch's rows
(``tf.IndexedSlices``): a step costs O(items x d), 3.4 s at 1M items on
this project's 2-core machine. Adagrad (the choice of TFRS's examples)
updates only the rows in the gradient: 20 ms per step at 1M items with the
sampled objective (docs/decisions.md#large-catalogues).
"""

import tensorflow as tf

#: ``--optimizer`` name -> ``tf.keras.optimizers`` class name.
OPTIMIZERS = {"adam": "Adam", "adagrad": "Adagrad"}


def make_optimizer(name: str, learning_rate: float):
    """The Keras optimizer ``--optimizer NAME`` names (``OPTIMIZERS``).

    >>> type(make_optimizer("adagrad", 0.1)).__name__
    'Adagrad'
    """
    if name not in OPTIMIZERS:
        raise ValueError(
            f"optimizer must be one of {OPTIMIZERS}. Received: "
            f"optimizer={name!r}"
        )
    return getattr(tf.keras.optimizers, OPTIMIZERS[name])(learning_rate)
