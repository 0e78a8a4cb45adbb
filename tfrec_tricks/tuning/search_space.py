"""The default search space of ``SequentialRetrievalHyperModel``.

The space is a list of rows, ``(name, kind, arguments, condition)``: a
KerasTuner hyperparameter ``kind`` (``"Choice"``, ``"Int"``, ...), the
arguments of its declaration, and ``(parent, parent_values)`` when it is
active only under those values of another (``None`` otherwise). The
hypermodel declares them in order, replacing a row by a fixed value or a
custom definition of the same name. Every default is what
``tfrec-tricks train`` trains, so a search's first trial is that run.

The ``features`` row offers the data's per-interaction features, the
float ones (soft one-hot encoded) and the categorical ``token`` ones
(embedded): "none", each alone, all of them. ``soft_one_hot_buckets``
applies only to the values with a float feature (without one, the space
has no such row).

With item attributes (``item_feature_space``) two rows follow the
features': ``item_feature_set``, which of them the model fuses, and
``feature_fusion``, how, active only when it fuses some. Without them
the space has neither row.

Example:

>>> rows = default_space(["time_gap"], num_items=1000)
>>> [row[0] for row in rows][:5]
['encoder', 'embedding_dim', 'num_layers', 'num_heads', 'dropout']
>>> next(row for row in rows if row[0] == "cpr_mi")[3]
('head', ['cpr'])
>>> rows = default_space(["time_gap"], 1000, token_features=["device"])
>>> next(row for row in rows if row[0] == "features")[2]["values"]
['none', 'time_gap', 'device', 'time_gap,device']
>>> next(row for row in rows if row[0] == "soft_one_hot_buckets")[3]
('features', ['time_gap', 'time_gap,device'])
>>> rows = default_space([], 1000, item_features=["none", "genres"])
>>> next(row for row in rows if row[0] == "feature_fusion")[3]
('item_feature_set', ['genres'])
"""

import dataclasses
from typing import Any

from tfrec_tricks.config_fields import field_default
from tfrec_tricks.features.feature_fusion import FUSION_MODES
from tfrec_tricks.heads.registry import head_spec
from tfrec_tricks.models.config import (
    HEADS,
    ModelConfig,
    default_head_dropout,
)
from tfrec_tricks.models.encoder_registry import encoders_where
from tfrec_tricks.training.feature_selection import ALL_FEATURES
from tfrec_tricks.training.train_config import (
    TrainConfig,
    default_learning_rate,
)
from tfrec_tricks.tuning.hyperparameter_values import NONE, decode_value

# ModelConfig fields set from the data, never tuned.
DATA_FIELDS = ("num_items", "max_len")
# Not ModelConfig fields: the training batch size, and the SSE switch that
# the SSE probabilities are conditional on (off: both are 0).
BATCH_SIZE = "batch_size"
SSE = "sse"
SSE_FIELDS = ("sse_item_probability", "sse_label_probability")
# Not a ModelConfig field: the item attributes fused with the ids, as
# comma-joined names ("none": id-only); ``feature_fusion`` is conditional
# on it.
ITEM_FEATURE_SET = "item_feature_set"
# The SSE paper sweeps 0.01-0.2 (0: that side off).
SSE_PROBABILITIES = (0.0, 0.01, 0.05, 0.1, 0.2)
DEFAULT_BATCH_SIZE = field_default(TrainConfig, "batch_size")


#: ModelConfig fields that only the tied softmax heads take: set, they
#: narrow the searched heads to those (``HeadSpec.tied_softmax``).
SOFTMAX_HEAD_SETTINGS = ("cosine_temperature", "num_sampled_negatives")


def _default(name: str) -> Any:
    """``ModelConfig``'s default of ``name``: the first trial's value."""
    return field_default(ModelConfig, name)


def default_space(
    feature_names: list[str],
    num_items: int,
    head: str | None = None,
    train_windows: bool = False,
    first_head: str = "softmax",
    heads: tuple = HEADS,
    item_features: list[str] | None = None,
    item_features_default: str = NONE,
    token_features: list[str] | None = None,
    feature_values: list[str] | None = None,
) -> list:
    """``(name, kind, arguments, (parent, parent_values) or None)`` rows.

    The first trial must train what ``train`` trains, and three of its
    defaults depend on other settings: the head on the data
    (``first_head``, ``--head auto``'s choice), the head dropout on a fixed
    ``head`` (0.3 for cpr, 0 for mos), the learning rate on the protocol
    (``train_windows``: 5e-3, else 1e-3). ``heads`` are the heads searched
    (the softmax heads alone with cosine scores).

    The rows, in this order: the encoder's, the optimisation's, the
    regularisers' (tied embeddings, SSE), the input features' (the item
    attributes' with ``item_features``) and the head's. A row without a
    condition may have three entries.

    Args:
        feature_names: list of str. The data's float per-interaction
            features.
        num_items: int. The catalogue size (reranker sizes stay below).
        head: str or None. The fixed head, if any. Defaults to None.
        train_windows: bool. Whether training uses windows. Defaults to
            False.
        first_head: str. The first trial's head. Defaults to "softmax".
        heads: tuple of str. The heads searched. Defaults to ``HEADS``.
        item_features: list of str or None. The ``item_feature_set``
            values (``ItemFeatureSpace.choices``, or the fixed or custom
            ones: ``feature_fusion`` applies under those that fuse some);
            None or empty: no item attributes. Defaults to None.
        item_features_default: str. The first trial's ``item_feature_set``
            (what ``train`` fuses). Defaults to "none".
        token_features: list of str or None. The data's categorical
            per-interaction features (``token`` columns), offered in
            ``features`` after the float ones. Defaults to None: none.
        feature_values: list of str or None. The ``features`` values (the
            fixed or custom ones): ``soft_one_hot_buckets`` applies under
            those with a float feature. Defaults to None: the default
            choices (``feature_choices``).

    Returns:
        list of rows.
    """
    return [
        *_encoder_rows(),
        *_optimisation_rows(train_windows),
        *_regularisation_rows(),
        *_feature_rows(feature_names, token_features or [], feature_values),
        *_item_feature_rows(item_features or [], item_features_default),
        *_head_rows(num_items, head, first_head, heads),
    ]


def _encoder_rows() -> list:
    """The encoder, its size and its dropout."""
    searched = encoders_where("searched")
    attention = encoders_where("attention")
    return [
        # The encoders of the default search (``EncoderSpec.searched``:
        # HSTU is left out until it is measured beside them).
        ("encoder", "Choice", {"values": list(searched)}, None),
        (
            "embedding_dim",
            "Choice",
            {"values": [32, 64, 128], "default": _default("embedding_dim")},
        ),
        ("num_layers", "Int", {"min_value": 1, "max_value": 2}),
        (
            "num_heads",
            "Choice",
            {"values": [1, 2, 4], "default": _default("num_heads")},
            ("encoder", [n for n in searched if n in attention]),
        ),
        (
            "dropout",
            "Float",
            {
                "min_value": 0.0,
                "max_value": 0.5,
                "step": 0.1,
                "default": _default("dropout"),
            },
        ),
    ]


def _optimisation_rows(train_windows: bool) -> list:
    """The learning rate (its default the protocol's) and the batch size."""
    return [
        (
            "learning_rate",
            "Float",
            {
                # Not 1e-4: trials below 3e-4 learned nothing in
                # Hyperband's first round (docs/decisions.md#search-budget).
                "min_value": 3e-4,
                "max_value": 1e-2,
                "sampling": "log",
                "default": default_learning_rate(train_windows),
            },
        ),
        (
            BATCH_SIZE,
            "Choice",
            {"values": [64, 128, 256], "default": DEFAULT_BATCH_SIZE},
        ),
    ]


def _regularisation_rows() -> list:
    """Tied embeddings, and the SSE switch with its two probabilities."""
    return [
        ("tie_embeddings", "Boolean", {"default": _default("tie_embeddings")}),
        (SSE, "Boolean", {"default": False}),
        (
            "sse_item_probability",
            "Choice",
            {"values": list(SSE_PROBABILITIES)},
            (SSE, [True]),
        ),
        (
            "sse_label_probability",
            "Choice",
            {"values": list(SSE_PROBABILITIES)},
            (SSE, [True]),
        ),
    ]


def feature_choices(feature_names: list[str]) -> list[str]:
    """The choices: "none", each feature, and all when there are several.

    Args:
        feature_names: list of str. The features, in order (``features``:
            the float per-interaction ones, then the token ones).

    Returns:
        list of ``features`` hyperparameter values.
    """
    features = [NONE, *feature_names]
    if len(feature_names) > 1:
        features.append(",".join(feature_names))
    return features


def _feature_rows(
    float_names: list[str],
    token_names: list[str],
    values: list[str] | None = None,
) -> list:
    """The per-interaction features (float, then token), and the float
    ones' buckets, which apply only to the ``values`` (the default
    choices unless given) with a float feature: a token feature is
    embedded, not soft one-hot encoded. Without such a value the space
    has no buckets row (KerasTuner takes no condition without values)."""
    features = feature_choices([*float_names, *token_names])
    if values is None:
        values = features
    floats = {*float_names, ALL_FEATURES} if float_names else set()
    with_floats = [
        value
        for value in values
        if floats & set(decode_value("features", value))
    ]
    rows = [("features", "Choice", {"values": features})]
    if with_floats:
        rows.append(
            (
                "soft_one_hot_buckets",
                "Choice",
                {
                    "values": [5, 10, 20],
                    "default": _default("soft_one_hot_buckets"),
                },
                ("features", with_floats),
            )
        )
    return rows


def _item_feature_rows(values: list[str], default: str) -> list:
    """The item attributes fused with the ids, and how when some are."""
    if not values:
        return []
    fused = [value for value in values if value != NONE]
    if default not in values:
        default = values[0]  # fixed or narrowed: the row is replaced
    rows = [
        (
            ITEM_FEATURE_SET,
            "Choice",
            {"values": list(values), "default": default},
        )
    ]
    if fused:
        rows.append(
            (
                "feature_fusion",
                "Choice",
                {
                    "values": list(FUSION_MODES),
                    "default": _default("feature_fusion"),
                },
                (ITEM_FEATURE_SET, fused),
            )
        )
    return rows


def _head_rows(
    num_items: int,
    head: str | None,
    first_head: str = "softmax",
    heads: tuple = HEADS,
) -> list:
    """The head (one of ``heads``, ``first_head`` first), the head dropout
    of the heads that take one, and each head's own settings (its spec's
    ``search_rows``): those of the heads in ``heads`` (KerasTuner would
    otherwise set the head to a value outside the choice to activate a
    condition)."""
    space = HeadSearch(num_items)
    heads = tuple(heads)
    specs = [head_spec(name) for name in heads]
    first = [
        r for s in specs if s.search_rows_first for r in s.search_rows(space)
    ]
    rest = [
        r
        for s in specs
        if not s.search_rows_first
        for r in s.search_rows(space)
    ]
    with_dropout = [name for name in heads if head_spec(name).takes_dropout]
    rows = [
        (
            "head",
            "Choice",
            {"values": list(heads), "default": first_head},
        ),
        *first,
    ]
    if with_dropout:
        rows.append(
            (
                "head_dropout",
                "Float",
                {
                    "min_value": 0.0,
                    "max_value": 0.5,
                    "step": 0.1,
                    # ``train``'s None means the head's default; a searched
                    # head starts at CPR's.
                    "default": default_head_dropout(head or "cpr"),
                },
                ("head", with_dropout),
            )
        )
    return rows + rest


@dataclasses.dataclass(frozen=True)
class HeadSearch:
    """What a head's ``search_rows`` reads: the catalogue's size, the
    first trial's values (``ModelConfig``'s defaults) and the search's
    value for "none"."""

    num_items: int
    none: str = NONE

    @staticmethod
    def default(name: str) -> Any:
        return _default(name)
