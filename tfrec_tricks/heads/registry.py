"""Output heads by name: what the toolkit knows about each, in one place.

A head is a layer (``OutputHead``) and a ``HeadSpec``: the spec says how a
``ModelConfig`` builds the layer, which of the config's settings are the
head's own, what it adds to the parameter and memory estimates, what a
search tries for it, how a report names it, whether a served catalogue
can grow under it, and which settings an older run may lack. Everything
that used to switch on a head's name asks the spec instead
(``head_spec(config.head)``), so a new head is one file: its layer and its
spec, registered with ``@register_head``::

    @register_head
    class ScaledSoftmaxSpec(HeadSpec):
        name = "scaled_softmax"
        summary = "h E^T + b times a learned scale"

        def build(self, config, hidden):
            return HeadParts(ScaledSoftmax(output_dim=...))

This module imports no TensorFlow (the command line reads the heads'
names before TensorFlow loads); a spec imports its layer in ``build``.
The built-in heads' specs are ``tfrec_tricks.heads.head_specs``.
"""

import dataclasses
from collections.abc import Mapping
from typing import Any, ClassVar

from tfrec_tricks.family_registry import RegisteredNames, Registry


@dataclasses.dataclass(frozen=True)
class HeadParts:
    """What a model takes from its head's spec.

    Attributes:
        head: the ``OutputHead`` layer.
        projection: the layer mapping the encoder's width to
            ``embedding_dim`` that the model applies before the head (the
            tied softmax's), or None when the head maps it itself.
        base_loss_weight: float >= 0. The weight of the loss of the
            head's base logits (Softmax-CPR's ``cpr_base_loss``), else 0.
    """

    head: Any
    projection: Any = None
    base_loss_weight: float = 0.0


class HeadSpec:
    """What the toolkit knows about one output head.

    Subclass it, set ``name`` (and the other class attributes that
    differ), implement ``build``, and decorate the class with
    ``register_head``.

    Attributes:
        name: str. The head's ``ModelConfig.head`` value (``--head``).
        summary: str. One line: what the head computes.
        default_dropout: float. The ``head_dropout`` it trains with when
            none is given.
        takes_dropout: bool. Whether ``head_dropout`` applies to it.
        tied_softmax: bool. Whether its logits are the tied softmax's
            ``h E^T + b``: the heads that take ``cosine_temperature`` and
            the sampled objective's ``num_sampled_negatives``, and whose
            training step can score each candidate from its own row.
        settings: the ``ModelConfig`` fields only this head reads.
        later_options: ``{field: value}``: settings added after runs of
            this head were recorded, and the value those runs trained
            with (``training.resumption``: a run that lacks the field is
            the same run as one that sets it to that value).
        search_rows_first: bool. Whether a search holds the head's own
            rows (``search_rows``) right after the head's choice, before
            the head dropout, rather than after it. The order of a
            search's rows is part of its identity: Softmax-CPR's searches
            were recorded with its rows first.
    """

    name: ClassVar[str] = ""
    summary: ClassVar[str] = ""
    default_dropout: ClassVar[float] = 0.0
    takes_dropout: ClassVar[bool] = False
    tied_softmax: ClassVar[bool] = False
    settings: ClassVar[tuple[str, ...]] = ()
    later_options: ClassVar[Mapping[str, Any]] = {}
    search_rows_first: ClassVar[bool] = False

    def build(self, config: Any, hidden: int) -> HeadParts:
        """The head of a model of ``config`` whose encoder is ``hidden``
        wide (``models.model_parts.output_head``)."""
        raise NotImplementedError(f"{type(self).__name__}.build")

    def check(self, config: Any) -> None:
        """Refuses, with a ValueError naming the setting, a ``config``
        this head cannot train (its own settings; the shared ones are
        ``ModelConfig``'s)."""

    def parameters(self, config: Any, width: int) -> int:
        """The head's weights beyond the item tables, for an encoder
        ``width`` wide (``training.memory_budget``): by default the
        projection to ``embedding_dim`` when the width differs."""
        d = config.embedding_dim
        return width * d if width != d else 0

    def logit_copies(self, config: Any) -> int:
        """How many ``[rows, columns]`` logit matrices a training step
        holds (a mixture holds one per component)."""
        return 1

    def extension_refusal(self, config: Any) -> str | None:
        """Why ``export --add-items`` cannot add items to a model of
        ``config`` exactly, or None when it can: by default it cannot,
        unless the head says how (a new item must leave every old
        item's score unchanged)."""
        return (
            f"--add-items cannot extend the head {self.name!r}: its spec "
            "does not say that a new item leaves every old item's score "
            "unchanged (HeadSpec.extension_refusal). Received: "
            f"head={config.head!r}"
        )

    def search_rows(self, space: Any) -> list:
        """The head's own hyperparameters in a search, as
        ``tuning.search_space`` rows ``(name, kind, kwargs, condition)``,
        each active when this head is chosen.

        Args:
            space: what the search knows: ``space.num_items`` (the
                catalogue's size), ``space.default(name)`` (a
                ``ModelConfig`` field's default: the first trial's value)
                and ``space.none`` (the search's value for "none").
        """
        return []

    def describe(self, config: Any) -> str:
        """How a report names the head of ``config``, e.g. "MoS 4"."""
        return self.name


_HEADS = Registry("head")
#: Class decorator: registers a ``HeadSpec`` subclass under its ``name``
#: (``Registry.register``; a ValueError for no name or a taken one).
register_head = _HEADS.register
#: Removes a registered head (a notebook's or a test's own).
unregister_head = _HEADS.unregister
#: The registered spec of head ``name`` (a ValueError naming the heads).
head_spec = _HEADS.get


def registered_heads(*also: str) -> RegisteredNames:
    """The registered heads' names, live, then ``also`` (``"auto"``).

    >>> "cpr" in registered_heads(), tuple(registered_heads("auto"))[-1]
    (True, 'auto')
    """
    return _HEADS.names(*also)


def tied_softmax_heads() -> tuple[str, ...]:
    """The registered heads whose logits are ``h E^T + b``."""
    return _HEADS.where("tied_softmax")
