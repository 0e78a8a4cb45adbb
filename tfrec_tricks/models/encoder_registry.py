"""Sequence encoders by name: what the toolkit knows about each.

An encoder is a Keras layer and an ``EncoderSpec``: the spec says how a
``ModelConfig`` builds the layer, whether it has attention heads (their
number must divide its width), its parameter and activation estimates
(``training.memory_budget``), whether a default search tries it, whether
its softmax copies from the history by itself (``--head auto``), and the
settings older runs lack. Everything that used to switch on an encoder's
name asks the spec (``encoder_spec(config.encoder)``), so a new encoder is
one file: its layer and its spec, registered with ``@register_encoder``.

This module imports no TensorFlow; the built-in specs are
``models.encoder_specs``, and the built-in layers register their classes
here (``register_encoder_layer``) for the specs' ``build``.
"""

from collections.abc import Mapping
from typing import Any, ClassVar

from tfrec_tricks.family_registry import RegisteredNames, Registry


class EncoderSpec:
    """What the toolkit knows about one sequence encoder.

    Subclass it, set ``name`` (and the other class attributes that
    differ), and decorate the class with ``register_encoder``. ``build``
    builds the layer registered under the name (``register_encoder_layer``)
    from the config; a spec of one's own may build its layer directly.

    Attributes:
        name: str. The encoder's ``ModelConfig.encoder`` value.
        summary: str. One line: what it is.
        attention: bool. Whether it has ``num_heads`` attention heads
            (which must divide its width) and ``attention_dropout``.
        searched: bool. Whether a default search tries it.
        copies_history: bool. Whether its softmax copies items from the
            history by itself, so ``--head auto`` needs no CPR for it.
        settings: the ``ModelConfig`` fields only this encoder reads.
        later_options: ``{field: value}``: settings added after runs of
            this encoder were recorded, and the value those runs trained
            with (``training.resumption``).
    """

    name: ClassVar[str] = ""
    summary: ClassVar[str] = ""
    attention: ClassVar[bool] = False
    searched: ClassVar[bool] = False
    copies_history: ClassVar[bool] = False
    settings: ClassVar[tuple[str, ...]] = ()
    later_options: ClassVar[Mapping[str, Any]] = {}

    def build(self, config: Any, hidden: int, **kwargs: Any) -> Any:
        """The encoder layer of a model of ``config``, ``hidden`` wide;
        ``kwargs`` are base layer arguments (its ``name``)."""
        layer = _LAYERS.get(self.name)
        if layer is None:
            raise NotImplementedError(
                f"{type(self).__name__}.build: no layer is registered as "
                f"{self.name!r} (register_encoder_layer), and the spec does "
                "not build one"
            )
        return layer.from_model_config(config, hidden, **kwargs)

    def parameters(self, config: Any, width: int) -> int:
        """The encoder's weights for a ``width``-wide encoder of
        ``embedding_dim`` inputs (``training.memory_budget``)."""
        return 0

    def attention_elements(self, config: Any, batch_size: int) -> int:
        """Activations a training step keeps for the backward pass beyond
        the encoder's states (attention scores and their softmax)."""
        if not self.attention:
            return 0
        length = config.max_len
        elements = batch_size * config.num_heads * length * length
        return elements * 2 * config.num_layers

    def search_rows(self, space: Any) -> list:
        """The encoder's own hyperparameters in a search (rows of
        ``tuning.search_space``, each active when it is chosen); see
        ``tfrec_tricks.heads.HeadSpec.search_rows`` for ``space``."""
        return []


_ENCODERS = Registry("encoder")
_LAYERS: dict[str, type] = {}
#: Class decorator: registers an ``EncoderSpec`` subclass under its
#: ``name`` (``Registry.register``).
register_encoder = _ENCODERS.register
#: The registered spec of encoder ``name`` (a ValueError naming them).
encoder_spec = _ENCODERS.get


def register_encoder_layer(name: str):
    """Class decorator: the layer ``EncoderSpec.build`` builds for
    ``name`` (its ``from_model_config(config, hidden_dim, **kwargs)``)."""

    def decorate(cls: type) -> type:
        _LAYERS[name] = cls
        return cls

    return decorate


def unregister_encoder(name: str) -> None:
    """Removes a registered encoder (a notebook's or a test's own)."""
    _ENCODERS.unregister(name)
    _LAYERS.pop(name, None)


def registered_encoders() -> RegisteredNames:
    """The registered encoders' names, live."""
    return _ENCODERS.names()


def encoders_where(attribute: str) -> tuple[str, ...]:
    """The registered encoders whose spec's ``attribute`` is true, e.g.
    ``encoders_where("attention")``."""
    return _ENCODERS.where(attribute)
