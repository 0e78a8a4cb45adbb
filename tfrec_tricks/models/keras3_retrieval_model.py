"""``tfrs.Model``'s training and test steps on a Keras 3 ``keras.Model``.

TFRS 0.7.7 raises ImportError under Keras 3, so under Keras 3 the
sequential retrieval model subclasses this class instead
(``retrieval_base``). It is TFRS's ``models/base.py`` written against
Keras 3's API, TensorFlow backend: the model writes ``compute_loss``
(which also updates its metrics); a step adds the regularization losses,
takes the gradients of the total under a ``tf.GradientTape`` and reports
every metric's result beside ``loss``, ``regularization_loss`` and
``total_loss``, as ``tfrs.Model`` does. Importing this module imports
Keras 3: the tf-keras path never imports it.
"""

from typing import Any

import keras
import tensorflow as tf


class Keras3RetrievalModel(keras.Model):
    """A Keras 3 model trained through its own ``compute_loss``.

    What ``tfrs.Model`` is under tf-keras: a subclass implements
    ``compute_loss(inputs, training)``, which returns the batch's loss and
    updates the model's metrics, and optionally ``call``. ``fit`` and
    ``evaluate`` call ``train_step`` and ``test_step``, which call it.

    Two differences from ``tfrs.Model``, both Keras 3's: the loss is
    scaled by the optimizer before the gradients
    (``optimizer.scale_loss``, the identity but under a
    ``LossScaleOptimizer``), and ``compile`` defaults to
    ``jit_compile=False`` where Keras 3's default ("auto") would compile
    with XLA on a GPU: tf-keras, and so the TFRS path, does not.

    Args:
        **kwargs: passed on to ``keras.Model``.

    Example:

    >>> import keras
    >>> import tensorflow as tf
    >>> from tfrec_tricks.models.keras3_retrieval_model import (
    ...     Keras3RetrievalModel)
    >>> class Mean(Keras3RetrievalModel):
    ...     def __init__(self):
    ...         super().__init__()
    ...         self.value = self.add_weight(shape=(), initializer="zeros")
    ...     def compute_loss(self, inputs, training=False):
    ...         return tf.reduce_mean((inputs["x"] - self.value) ** 2)
    >>> model = Mean()
    >>> model.compile(optimizer=keras.optimizers.SGD(0.5))
    >>> data = tf.data.Dataset.from_tensors({"x": tf.constant([1.0, 3.0])})
    >>> logs = model.fit(data, epochs=20, verbose=0).history
    >>> round(float(model.value.numpy()), 3)
    2.0
    >>> sorted(logs)
    ['loss', 'regularization_loss', 'total_loss']
    """

    def compile(self, *args: Any, jit_compile: Any = False, **kwargs: Any):
        """``keras.Model.compile``, without XLA unless asked for.

        Args:
            *args: passed on to ``keras.Model.compile``.
            jit_compile: bool or "auto". Defaults to False (see the class).
            **kwargs: passed on to ``keras.Model.compile``.
        """
        super().compile(*args, jit_compile=jit_compile, **kwargs)

    def compute_loss(self, inputs: Any, training: bool = False) -> tf.Tensor:
        """Defines the loss, as ``tfrs.Model.compute_loss``.

        Keras 3's own ``compute_loss(x, y, y_pred, ...)`` is replaced:
        this model's steps call this one and nothing else calls it.

        Args:
            inputs: the batch: features, targets and weights as the
                subclass reads them.
            training: bool. Whether the model is in training mode.

        Returns:
            The loss, a scalar tensor.
        """
        raise NotImplementedError(
            "Implementers must implement the `compute_loss` method."
        )

    def train_step(self, inputs: Any) -> dict:
        """One gradient step on ``compute_loss`` plus the regularization
        losses; returns the logs (see ``_logs``)."""
        with tf.GradientTape() as tape:
            loss = self.compute_loss(inputs, training=True)
            # Read inside the tape: regularizers are computed on access.
            regularization_loss = self._regularization_loss()
            total_loss = loss + regularization_loss
            scaled_loss = self.optimizer.scale_loss(total_loss)
        variables = self.trainable_variables
        gradients = tape.gradient(scaled_loss, variables)
        self.optimizer.apply_gradients(zip(gradients, variables))
        return self._logs(loss, regularization_loss, total_loss)

    def test_step(self, inputs: Any) -> dict:
        """``compute_loss`` in inference mode; returns the logs."""
        loss = self.compute_loss(inputs, training=False)
        regularization_loss = self._regularization_loss()
        return self._logs(loss, regularization_loss, loss + regularization_loss)

    def _regularization_loss(self) -> tf.Tensor:
        # tfrs.Model's sum: 0.0 without regularization losses.
        return tf.reduce_sum([tf.reduce_sum(loss) for loss in self.losses])

    def _logs(self, loss, regularization_loss, total_loss) -> dict:
        """Every metric's result, then the three losses (which win over a
        metric of the same name, as in ``tfrs.Model``)."""
        logs = {}
        for metric in self.metrics:
            result = metric.result()
            # Keras 3 groups compiled metrics in one metric of results.
            if isinstance(result, dict):
                logs.update(result)
            else:
                logs[metric.name] = result
        logs["loss"] = loss
        logs["regularization_loss"] = regularization_loss
        logs["total_loss"] = total_loss
        return logs
