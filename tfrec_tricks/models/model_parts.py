"""The parts of a ``SequentialRetrievalModel``, built from its config.

One function per construction step of the model, in the order the model
calls them (``SequentialRetrievalModel.__init__``): that order is the
order in which layers and weights are created, on which seeded initial
weights, automatic layer names and saved models' weight order depend.
"""

from typing import Any

import numpy as np
import tensorflow as tf

from tfrec_tricks.data.training_statistics import LOG1P_FEATURES
from tfrec_tricks.features import (
    CategoricalFeatureEmbedding,
    ItemFeatureEncoder,
)
from tfrec_tricks.heads.registry import head_spec
from tfrec_tricks.layers import (
    SoftOneHotEncoding,
    StochasticSharedEmbedding,
    TiedItemEmbedding,
)
from tfrec_tricks.models.config import ModelConfig
from tfrec_tricks.models.encoders import encoder_for


def item_embedding(config: ModelConfig) -> TiedItemEmbedding:
    """The (tied) item table and its output bias, built.

    It is built here, not on the first call, because the SSE layers and
    the heads read its table before any call.

    Example:

    >>> from tfrec_tricks.models import ModelConfig
    >>> item_embedding(ModelConfig(num_items=5, embedding_dim=4)).built
    True
    """
    embedding = TiedItemEmbedding(
        config.num_items,
        config.embedding_dim,
        use_bias=config.output_bias,
        tie=config.tie_embeddings,
        embeddings_initializer=tf.keras.initializers.RandomNormal(
            stddev=config.embedding_init_stddev
        ),
        output_embeddings_initializer=tf.keras.initializers.RandomNormal(
            stddev=config.embedding_init_stddev
        ),
        name="item_embedding",
    )
    embedding.build(None)
    return embedding


def sse_layers(
    config: ModelConfig, item_graph: Any, item_graph_num_edges: int | None
) -> tuple:
    """The SSE layers of the history items and the labels.

    Args:
        config: a ``ModelConfig``.
        item_graph: int array [E, 2] of contiguous item ids or None.
        item_graph_num_edges: int or None, the CSR size of the graph when
            ``item_graph`` is not given (``from_config``).

    Returns:
        ``(item_sse, label_sse, num_edges)``: each layer None when its
        probability is 0; ``num_edges`` the graph size of the layers that
        exist (None without SSE), which the model's config saves so that
        ``from_config`` can create the graph weights before
        ``load_weights`` fills them.
    """
    item_sse = _sse(
        config,
        config.sse_item_probability,
        item_graph,
        item_graph_num_edges,
        "item_sse",
        0,
    )
    label_sse = _sse(
        config,
        config.sse_label_probability,
        item_graph,
        item_graph_num_edges,
        "label_sse",
        1,
    )
    sse = item_sse or label_sse
    return item_sse, label_sse, None if sse is None else sse.num_edges


def _sse(config, probability, graph, num_edges, name, offset):
    if not probability:
        return None
    seed = config.sse_seed
    layer = StochasticSharedEmbedding(
        config.num_items,
        probability,
        graph=graph,
        rho=config.sse_graph_rho,
        # Items and labels are not replaced alike.
        seed=None if seed is None else seed + offset,
        num_edges=None if graph is not None else num_edges,
        name=name,
    )
    layer.build(None)
    return layer


def checked_feature_statistics(
    config: ModelConfig, feature_statistics: dict | None
) -> dict:
    """A copy of ``feature_statistics``, checked against the config.

    Args:
        config: a ``ModelConfig``.
        feature_statistics: dict ``{name: (mean, variance)}`` or None.

    Returns:
        dict, empty for None.

    Raises:
        ValueError: if a name is not in ``config.features`` (a typo would
            otherwise leave that feature unstandardised).
    """
    statistics = dict(feature_statistics or {})
    unknown = sorted(set(statistics) - set(config.features))
    if unknown:
        raise ValueError(
            "feature_statistics names features the config does not "
            f"use. Received: {unknown}; config.features="
            f"{list(config.features)}"
        )
    return statistics


def feature_encoders(config: ModelConfig, statistics: dict) -> dict:
    """A soft one-hot encoder per feature of ``config.features``, then a
    ``CategoricalFeatureEmbedding`` per feature of
    ``config.token_features`` (added to the item embedding at its
    position, as the float features are: the sum fusion).

    Each feature is standardised (after a log1p for those of
    ``LOG1P_FEATURES``) with its statistics, or (0, 1) without them, and a
    missing (NaN) value gets a learned vector.

    Args:
        config: a ``ModelConfig``.
        statistics: dict ``{name: (mean, variance)}``, checked.
    """
    encoders = {}
    for name in config.features:
        options = {"normalization": "standardize"}
        if name in LOG1P_FEATURES:
            options = {"normalization": "log1p_standardize"}
        if name in statistics:
            mean, variance = statistics[name]
            options.update(mean=float(mean), variance=float(variance))
        encoders[name] = SoftOneHotEncoding(
            config.soft_one_hot_buckets,
            config.embedding_dim,
            missing="learned",
            name=f"feature_{name}",
            **options,
        )
    # After the float ones: a model without token features creates the
    # same layers, in the same order, as before they existed.
    for feature in config.token_features:
        # Single-valued ([B, L, 1] ids): id 0 (no value, padding) gives
        # zeros. The model passes the ids as float32 (exact below 2**24);
        # the layer casts them back to integers.
        encoders[feature["name"]] = CategoricalFeatureEmbedding(
            feature["vocabulary_size"],
            config.embedding_dim,
            embeddings_initializer=tf.keras.initializers.TruncatedNormal(
                stddev=config.embedding_init_stddev
            ),
            name=f"token_feature_{feature['name']}",
        )
    return encoders


def encoder_layers(config: ModelConfig, hidden: int) -> tuple:
    """``(embedding_dropout, encoder, output_dropout)``.

    The dropouts are created around the encoder, in this order, since
    their automatic names depend on it.

    Args:
        config: a ``ModelConfig``.
        hidden: int, the encoder's width.
    """
    embedding_dropout = tf.keras.layers.Dropout(config.dropout)
    encoder = encoder_for(config, hidden)
    return embedding_dropout, encoder, tf.keras.layers.Dropout(config.dropout)


def output_head(config: ModelConfig, hidden: int) -> tuple:
    """The output head ``config.head`` names, built by its spec
    (``tfrec_tricks.heads.head_spec``).

    Each head has the same interface (``call``, ``top_k_candidates``,
    ``score_candidates``, ``has_index``, ...): the rest of the model asks
    the head. Each maps the encoder's width to ``embedding_dim`` itself
    (the tied softmax through a ``projection`` only when they differ).

    Args:
        config: a ``ModelConfig``.
        hidden: int, the encoder's width.

    Returns:
        ``(head, projection, base_loss_weight)``: ``projection`` the tied
        softmax's projection or None; ``base_loss_weight`` is
        ``cpr_base_loss`` for CPR (the weight of its base logits' own
        loss), else 0.
    """
    parts = head_spec(config.head).build(config, hidden)
    return parts.head, parts.projection, float(parts.base_loss_weight)


def candidate_probabilities(
    num_items: int, item_frequencies: Any
) -> np.ndarray:
    """The candidate sampling probabilities of the logQ correction.

    Args:
        num_items: int, N.
        item_frequencies: float array [N] of target counts or None.

    Returns:
        float32 array [N]: the normalised counts, or uniform over the
        N - 1 items for None (no correction until weights are loaded).

    Raises:
        ValueError: if the counts are not N non-negative values with a
            positive sum.

    Example:

    >>> candidate_probabilities(4, [0, 1, 1, 2]).tolist()
    [0.0, 0.25, 0.25, 0.5]
    """
    n = num_items
    if item_frequencies is None:
        return np.full([n], 1.0 / (n - 1), np.float32)
    counts = np.asarray(item_frequencies, np.float64).ravel()
    if counts.shape != (n,) or (counts < 0).any() or not (counts.sum() > 0):
        raise ValueError(
            f"item_frequencies must be {n} non-negative counts "
            "(one per item id, padding included) with a "
            f"positive sum. Received: shape={counts.shape}"
        )
    return (counts / counts.sum()).astype(np.float32)


def arrays_from_data(config: ModelConfig, data: Any, item_graph: Any) -> dict:
    """The model's array arguments, read from prepared data.

    The training-target counts (logQ correction) and the statistics of the
    standardised features over the real positions of the training
    histories, from ``data.training_statistics``; a raw-id item graph mapped to
    contiguous ids (edges with an item not in the vocabulary are dropped).

    Args:
        config: a ``ModelConfig``.
        data: a ``tfrec_tricks.data.InMemoryDataset`` or ``OnDiskDataset``.
        item_graph: array [E, 2] of raw item ids or None.

    Returns:
        dict of ``item_graph``, ``item_frequencies``,
        ``feature_statistics`` and ``item_feature_values``.

    Raises:
        ValueError: the data's catalogue size is not ``config.num_items``,
            or it lacks a feature of ``config.features``.
    """
    statistics = data.statistics
    if len(statistics.item_counts) != config.num_items:
        raise ValueError(
            f"config.num_items is {config.num_items} but the data has "
            f"{len(statistics.item_counts)} items (padding included)."
        )
    available = statistics.feature_statistics
    for name in config.features:
        if name not in statistics.moments:
            raise ValueError(
                f"config.features names {name!r} but the data has no "
                f"such feature. Received: {sorted(statistics.moments)}"
            )
    feature_statistics = {
        name: available[name] for name in config.features if name in available
    }
    graph = None
    if item_graph is not None:
        index = {raw: i for i, raw in enumerate(data.vocabulary.items)}
        edges = [
            (index[str(a)], index[str(b)])
            for a, b in np.asarray(item_graph)
            if str(a) in index and str(b) in index
        ]
        graph = np.asarray(edges, np.int64).reshape(-1, 2)
        graph = graph[(graph > 0).all(axis=1)]
    return {
        "item_graph": graph,
        "item_frequencies": statistics.item_counts,
        "feature_statistics": feature_statistics,
        "item_feature_values": _item_feature_values(config, data),
    }


def _item_feature_values(config: ModelConfig, data: Any) -> dict | None:
    """The items' attribute values and trained mask of ``data``, for
    ``config.item_features`` (None without)."""
    if not config.item_features:
        return None
    features = getattr(data, "item_features", None)
    wanted = [f["name"] for f in config.item_features]
    if features is None or features.names() != wanted:
        raise ValueError(
            f"config.item_features names {wanted} but the data has item "
            f"features {None if features is None else features.names()}."
        )
    return {
        "values": features.values,
        "id_known": np.asarray(data.trained_items, np.float32),
    }


def item_feature_encoder(
    config: ModelConfig, item_feature_values: dict | None
) -> ItemFeatureEncoder | None:
    """The ``ItemFeatureEncoder`` of ``config.item_features``, built, with
    the items' values when given; None without item features.

    Args:
        config: a ``ModelConfig``.
        item_feature_values: ``{"values": {name: array}, "id_known":
            array}`` or None (``from_config``: ``load_weights`` fills
            them).
    """
    if not config.item_features:
        return None
    encoder = ItemFeatureEncoder(
        config.num_items,
        config.embedding_dim,
        [dict(f) for f in config.item_features],
        fusion=config.feature_fusion,
        soft_one_hot_buckets=config.soft_one_hot_buckets,
        id_dropout=config.item_id_dropout,
        seed=config.sse_seed,
        name="item_features",
    )
    encoder.build(None)
    if item_feature_values is not None:
        encoder.set_item_values(
            item_feature_values["values"], item_feature_values["id_known"]
        )
    return encoder
