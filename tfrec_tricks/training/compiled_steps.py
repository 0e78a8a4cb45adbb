"""How many training steps one compiled call runs (``--steps-per-execution``).

Keras runs ``steps_per_execution`` steps per ``tf.function`` call in a
``tf.range`` loop. AutoGraph traces that loop's body twice (a first pass to
learn the structure of the step's outputs, which are undefined before the
loop), so a model with S > 1 costs a second trace of its training and
evaluation steps: seconds, once per run. What the loop saves is the
overhead of the calls it folds, fewer than S per epoch when the epoch holds
fewer than S steps: on data that small the second trace costs more than
the loop saves, so such an epoch runs one step per call. Measured on a
tiny synthetic run (60 users, 13 steps an epoch, 2 epochs): 9.9 s and
8.6 s against 21.6 s and 14.0 s at S = 16 (two rounds in turn) for the
whole ``train``.

An epoch of S steps or more keeps S, so every run of real data computes
exactly as before; with fewer steps the dropout draws of a model may differ
from those of the loop (its random ops get other op seeds), not the math.
"""


def steps_per_call(requested: int, steps_per_epoch: int | None) -> int:
    """The steps per compiled call for an epoch of ``steps_per_epoch``.

    Args:
        requested: int. ``--steps-per-execution`` (S), at least 1.
        steps_per_epoch: int or None. Training steps per epoch; None or a
            negative count (``tf.data``'s unknown or infinite cardinality)
            when unknown.

    Returns:
        int. ``requested``, or 1 when the epoch is known to hold fewer
        than ``requested`` steps.

    Raises:
        ValueError: ``requested`` below 1.

    Example:

    >>> steps_per_call(16, 1490)
    16
    >>> steps_per_call(16, 3)
    1
    >>> steps_per_call(16, None)
    16
    """
    if requested < 1:
        raise ValueError(
            f"steps per execution must be at least 1. Received: {requested}"
        )
    if steps_per_epoch is not None and 0 <= steps_per_epoch < requested:
        return 1
    return requested
