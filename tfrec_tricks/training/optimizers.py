"""``--optimizer`` and ``--lr-schedule``: how a run's weights are updated.

Adam (the papers' choice) updates its moments of every row of the item
table at every step, also when the gradient holds only the batch's rows
(``tf.IndexedSlices``): a step costs O(items x d), 3.4 s at 1M items on
this project's 2-core machine. Adagrad (the choice of TFRS's examples)
updates only the rows in the gradient: 20 ms per step at 1M items with the
sampled objective (docs/decisions.md#large-catalogues).
"""

from typing import Any

import tensorflow as tf

# Re-exported: the choices live in a module without TensorFlow.
from tfrec_tricks.training.option_choices import (
    LR_SCHEDULES as LR_SCHEDULES,
)
from tfrec_tricks.training.option_choices import OPTIMIZERS as OPTIMIZERS


def make_optimizer(name: str, learning_rate: Any):
    """The Keras optimizer ``--optimizer NAME`` names (``OPTIMIZERS``).

    Args:
        name: str. A key of ``OPTIMIZERS``.
        learning_rate: float or ``tf.keras.optimizers.schedules``
            schedule (`learning_rate_schedule`).

    >>> type(make_optimizer("adagrad", 0.1)).__name__
    'Adagrad'
    """
    if name not in OPTIMIZERS:
        raise ValueError(
            f"optimizer must be one of {OPTIMIZERS}. Received: "
            f"optimizer={name!r}"
        )
    return getattr(tf.keras.optimizers, OPTIMIZERS[name])(learning_rate)


def learning_rate_schedule(
    schedule: str, learning_rate: float, total_steps: int, warmup_steps: int = 0
) -> Any:
    """The learning rate of each optimizer step, for `make_optimizer`.

    ``"constant"`` holds ``learning_rate``; ``"cosine"`` decays it to 0
    along half a cosine, reaching 0 at ``total_steps`` (Keras'
    ``CosineDecay``). Either first rises linearly from 0 over
    ``warmup_steps``. The schedule reads the optimizer's step counter, so
    a run resumed from its backup continues where it stopped.

    Args:
        schedule: str. One of ``LR_SCHEDULES``.
        learning_rate: float. The rate held (constant) or at the top of
            the cosine.
        total_steps: int. Steps of the whole run (``--epochs`` x steps per
            epoch): where the cosine ends.
        warmup_steps: int. Steps of the linear warmup, counted in
            ``total_steps``. Defaults to 0.

    Returns:
        ``learning_rate`` itself (constant, no warmup: the plain float the
        optimizer always had), else a
        ``tf.keras.optimizers.schedules.CosineDecay``.

    Raises:
        ValueError: an unknown schedule, or a warmup that leaves no steps
            to decay over.

    Example:

    >>> rate = learning_rate_schedule("cosine", 0.002, total_steps=100)
    >>> [round(float(rate(step)), 6) for step in (0, 50, 100)]
    [0.002, 0.001, 0.0]
    >>> rate = learning_rate_schedule("constant", 0.002, 100, warmup_steps=10)
    >>> [round(float(rate(step)), 6) for step in (0, 5, 10, 99)]
    [0.0, 0.001, 0.002, 0.002]
    """
    if schedule not in LR_SCHEDULES:
        raise ValueError(
            f"lr_schedule must be one of {LR_SCHEDULES}. Received: "
            f"lr_schedule={schedule!r}"
        )
    if not 0 <= warmup_steps < total_steps:
        raise ValueError(
            f"The warmup must leave steps to train at the rate: warmup "
            f"steps must be in [0, {total_steps}) (the run's steps). "
            f"Received: warmup_steps={warmup_steps}"
        )
    if schedule == "constant" and not warmup_steps:
        return learning_rate
    # The cosine's floor alpha is a fraction of the top rate: 1 holds it.
    floor = 1.0 if schedule == "constant" else 0.0
    return tf.keras.optimizers.schedules.CosineDecay(
        initial_learning_rate=0.0 if warmup_steps else learning_rate,
        decay_steps=total_steps - warmup_steps,
        alpha=floor,
        warmup_target=learning_rate if warmup_steps else None,
        warmup_steps=warmup_steps,
    )
