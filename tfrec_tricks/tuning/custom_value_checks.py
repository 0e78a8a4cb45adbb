"""Every value of a custom hyperparameter is checked before the first trial.

``tfrec-tricks tune --choices dropout=0.1,1.5`` gives the search a custom
definition of ``dropout``. The defaults check only each setting's first
value; a bad later one would fail every trial that drew it (KerasTuner
prints the traceback and retries, then gives up). ``check_custom_values``
refuses it at once, naming the setting and the value.

Example:

>>> check_batch_size(0)
Traceback (most recent call last):
...
ValueError: batch_size must be a positive integer. Received: batch_size=0
"""

from collections.abc import Callable
from typing import Any

from tfrec_tricks.tuning.keras_tuner_binding import import_keras_tuner

keras_tuner = import_keras_tuner()

from tfrec_tricks.tuning.hyperparameter_values import (  # noqa: E402
    listed_values,
)
from tfrec_tricks.tuning.search_space import BATCH_SIZE  # noqa: E402


def check_custom_values(
    custom: dict,
    conditions: dict,
    fixed_hps: dict,
    model_config: Callable[[Any], Any],
) -> None:
    """Refuses a value of ``custom`` that no trial could train.

    Each value is checked with the defaults for the rest, and with the
    head (or other switch) it applies under when it is conditional.

    Args:
        custom: dict of KerasTuner hyperparameters by name: the custom
            definitions of the search.
        conditions: dict of ``(parent, parent_values)`` or None by name:
            when each setting applies (``search_space`` rows).
        fixed_hps: dict of the fixed hyperparameter values by name.
        model_config: the hypermodel's ``model_config``: raises
            ValueError or TypeError for values no model takes.

    Raises:
        ValueError: naming the setting, the value and why.
    """
    for name, definition in custom.items():
        condition = conditions.get(name)
        for value in listed_values(definition):
            hp = keras_tuner.HyperParameters()
            hp.values[name] = value
            if condition is not None:
                parent, parent_values = condition
                fixed_parent = fixed_hps.get(parent)
                if fixed_parent is not None:
                    if fixed_parent not in parent_values:
                        continue  # never active: never trained
                else:
                    hp.values[parent] = parent_values[0]
            try:
                if name == BATCH_SIZE:
                    check_batch_size(value)
                else:
                    model_config(hp)
            except (ValueError, TypeError) as error:
                raise ValueError(
                    f"--choices {name}: the value {value!r} cannot "
                    f"train ({error}). Received: {name}={value!r}"
                ) from None


def check_batch_size(value: Any) -> None:
    """Raises ValueError unless ``value`` is a positive integer."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(
            f"batch_size must be a positive integer. Received: "
            f"batch_size={value!r}"
        )
