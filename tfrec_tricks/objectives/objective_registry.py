"""Training objectives by name (``--objective``): what the toolkit knows
about each, in one place.

An objective is a loss (``Objective``, which reads an ``EncodedBatch``)
and an ``ObjectiveSpec``: the spec says which ``Objective`` a
``ModelConfig`` trains a head with, which of the config's settings are
the objective's own and which it refuses, how many logit columns a
training step holds (the memory check before training), and which
settings an older run may lack. Everything that used to switch on an
objective's name asks the spec instead (``objective_spec(
config.objective)``), so a new objective is one file: its loss and its
spec, registered with ``@register_objective``::

    @register_objective
    class SmoothedSpec(ObjectiveSpec):
        name = "smoothed"
        summary = "the full softmax with label smoothing 0.1"

        def build(self, config, head, base_loss_weight=0.0):
            return SmoothedSoftmax(base_loss_weight=base_loss_weight)

This module imports no TensorFlow (the command line reads ``--objective``'s
choices before TensorFlow loads); a spec imports its loss in ``build``.
The built-in objectives' specs are ``tfrec_tricks.objectives.
objective_specs``.
"""

from collections.abc import Mapping
from typing import Any, ClassVar

from tfrec_tricks.family_registry import RegisteredNames, Registry


class ObjectiveSpec:
    """What the toolkit knows about one training objective.

    Subclass it, set ``name`` (and the other class attributes that
    differ), implement ``build``, and decorate the class with
    ``register_objective``.

    Attributes:
        name: str. The objective's ``ModelConfig.objective`` value
            (``--objective``).
        summary: str. One line: what the objective trains with.
        settings: the ``ModelConfig`` fields only this objective reads:
            a config that sets one of them (to other than its default)
            with another objective is refused, the message naming the
            objectives that read it.
        later_options: ``{field: value}``: settings added after runs of
            this objective were recorded, and the value those runs
            trained with (``training.resumption``).
    """

    name: ClassVar[str] = ""
    summary: ClassVar[str] = ""
    settings: ClassVar[tuple[str, ...]] = ()
    later_options: ClassVar[Mapping[str, Any]] = {}

    def build(
        self, config: Any, head: Any, base_loss_weight: float = 0.0
    ) -> Any:
        """The ``Objective`` that trains ``head`` for a model of ``config``.

        Args:
            config: a ``ModelConfig``.
            head: the model's ``OutputHead``.
            base_loss_weight: float >= 0, the weight of the loss of the
                head's base logits (``HeadParts.base_loss_weight``).
        """
        raise NotImplementedError(f"{type(self).__name__}.build")

    def check(self, config: Any) -> None:
        """Refuses, with a ValueError naming the setting, a ``config``
        this objective cannot train (beyond ``settings``, which
        ``ModelConfig`` checks)."""

    def logit_columns(self, config: Any, rows: int) -> int:
        """The columns of a training step's ``[rows, columns]`` logits
        (``training.memory_budget``): by default the whole catalogue."""
        return config.num_items


_OBJECTIVES = Registry("objective")
#: Class decorator: registers an ``ObjectiveSpec`` subclass under its
#: ``name`` (``Registry.register``; a ValueError for no name or a taken
#: one).
register_objective = _OBJECTIVES.register
#: Removes a registered objective (a notebook's or a test's own).
unregister_objective = _OBJECTIVES.unregister
#: The registered spec of objective ``name`` (a ValueError naming the
#: objectives).
objective_spec = _OBJECTIVES.get


def registered_objectives() -> RegisteredNames:
    """The registered objectives' names, live.

    >>> tuple(registered_objectives())[:2]
    ('full', 'sampled')
    """
    return _OBJECTIVES.names()


def objectives_reading(setting: str) -> tuple[str, ...]:
    """The registered objectives whose ``settings`` hold ``setting``.

    >>> objectives_reading("num_sampled_negatives")
    ('sampled',)
    """
    names = registered_objectives()
    return tuple(n for n in names if setting in objective_spec(n).settings)


def objective_for(config: Any, head: Any, base_loss_weight: float = 0.0) -> Any:
    """The objective ``config`` trains ``head`` with: its spec's
    ``build``.

    Args:
        config: a ``tfrec_tricks.models.ModelConfig``.
        head: the model's output head.
        base_loss_weight: float >= 0, the weight of the loss of the head's
            base logits. Defaults to 0.

    Returns:
        An ``Objective``.

    Raises:
        ValueError: ``config.objective`` is not a registered objective.

    Example:

    >>> from tfrec_tricks.layers import TiedSoftmax
    >>> from tfrec_tricks.models import ModelConfig
    >>> config = ModelConfig(num_items=10, objective="sampled")
    >>> objective_for(config, TiedSoftmax())
    InBatchSampledSoftmax(base_loss_weight=0.0)
    """
    return objective_spec(config.objective).build(
        config, head, base_loss_weight
    )
