"""The fused item table: item id embeddings plus the items' attributes."""

import re
from collections.abc import Mapping
from typing import Any

import numpy as np
import tensorflow as tf

from tfrec_tricks.data.ragged_rows import RaggedRows
from tfrec_tricks.features.categorical_feature_embedding import (
    CategoricalFeatureEmbedding,
)
from tfrec_tricks.features.feature_fusion import FUSION_MODES, FeatureFusion
from tfrec_tricks.layers.common import is_integer, is_training, softmax_dtype
from tfrec_tricks.layers.soft_one_hot_encoding import SoftOneHotEncoding
from tfrec_tricks.serialization import register

TOKEN_KINDS = ("token", "token_seq")
FLOAT_KINDS = ("float", "float_seq")
FEATURE_KINDS = TOKEN_KINDS + FLOAT_KINDS
# Kinds of one value per item: their width is 1.
_SCALAR_KINDS = ("token", "float")
_FEATURE_KEYS = (
    "name",
    "kind",
    "width",
    "vocabulary_size",
    "mean",
    "variance",
    "num_values",
)
# A feature name is part of weight and layer names.
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")


def _feature_error(index: int, message: str, received: str) -> ValueError:
    return ValueError(f"features[{index}]: {message}. Received: {received}")


def check_feature(index: int, feature: Any) -> dict:
    """One feature description, checked and completed (plain JSON types).

    Args:
        index: int. Its position in ``features`` (for the messages).
        feature: dict with ``name``, ``kind``, ``width`` and, as needed,
            ``vocabulary_size`` (token kinds), ``mean`` and ``variance``
            (float kinds; default 0.0 and 1.0), and optionally
            ``num_values`` (the values stored: ragged tables).

    Returns:
        A new dict with all of ``name, kind, width, vocabulary_size, mean,
        variance``, and ``num_values`` when given.

    Raises:
        ValueError: a key is missing or unknown, or a value is wrong.
    """
    if not isinstance(feature, Mapping):
        raise _feature_error(
            index, "a feature is a dict", f"{type(feature).__name__}"
        )
    unknown = sorted(set(feature) - set(_FEATURE_KEYS))
    missing = [key for key in ("name", "kind", "width") if key not in feature]
    if unknown or missing:
        raise _feature_error(
            index,
            f"a feature has keys {_FEATURE_KEYS} (name, kind and width "
            "required)",
            f"keys={sorted(feature)}",
        )
    name, kind, width = feature["name"], feature["kind"], feature["width"]
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise _feature_error(
            index,
            "`name` must be letters, digits, '_', '.' or '-', starting with "
            "a letter or digit",
            f"name={name!r}",
        )
    if kind not in FEATURE_KINDS:
        raise _feature_error(
            index, f"`kind` must be one of {FEATURE_KINDS}", f"kind={kind!r}"
        )
    if not is_integer(width) or width < 1:
        raise _feature_error(
            index, "`width` must be an int >= 1", f"width={width!r}"
        )
    if kind in _SCALAR_KINDS and width != 1:
        raise _feature_error(
            index,
            f"kind {kind!r} has one value per item, so width 1 (use "
            f"'{kind}_seq' for several)",
            f"width={width!r}",
        )
    size = feature.get("vocabulary_size", 0)
    if kind in TOKEN_KINDS and (not is_integer(size) or size < 2):
        raise _feature_error(
            index,
            "a token feature needs `vocabulary_size`, an int >= 2 (id 0 is "
            "padding, 1 out-of-vocabulary)",
            f"vocabulary_size={size!r}",
        )
    if kind in FLOAT_KINDS and size != 0:
        raise _feature_error(
            index,
            "a float feature has no vocabulary: `vocabulary_size` is 0",
            f"vocabulary_size={size!r}",
        )
    mean, variance = feature.get("mean", 0.0), feature.get("variance", 1.0)
    try:
        mean, variance = float(mean), float(variance)
    except (TypeError, ValueError):
        mean = variance = float("nan")
    if not np.isfinite(mean) or not np.isfinite(variance) or variance < 0:
        raise _feature_error(
            index,
            "`mean` must be a finite float and `variance` a finite float >= 0",
            f"mean={feature.get('mean')!r}, "
            f"variance={feature.get('variance')!r}",
        )
    checked = {
        "name": name,
        "kind": kind,
        "width": int(width),
        "vocabulary_size": int(size),
        "mean": mean,
        "variance": variance,
    }
    if "num_values" in feature:
        num_values = feature["num_values"]
        if not is_integer(num_values) or num_values < 0:
            raise _feature_error(
                index,
                "`num_values` (the values stored) must be an int >= 0",
                f"num_values={num_values!r}",
            )
        checked["num_values"] = int(num_values)
    return checked


def check_features(features: Any) -> list:
    """`check_feature` of each of ``features``; names must be unique."""
    if isinstance(features, (str, bytes, Mapping)) or not isinstance(
        features, (list, tuple)
    ):
        raise ValueError(
            "`features` must be a list of dicts. "
            f"Received: features={features!r}"
        )
    checked = [check_feature(i, f) for i, f in enumerate(features)]
    names = [f["name"] for f in checked]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise ValueError(
            "Feature names must be unique. "
            f"Received: features with names {repeated} more than once"
        )
    ragged = ["num_values" in f for f in checked]
    if any(ragged) and not all(ragged):
        raise ValueError(
            "Either every feature gives `num_values` (ragged tables) or none "
            "does (padded tables). Received: num_values for "
            f"{[n for n, r in zip(names, ragged) if r]} only"
        )
    return checked


@register
class ItemFeatureEncoder(tf.keras.layers.Layer):
    """The item table fused with every item's attributes, all at once.

    The layer holds each item's feature values (non-trainable weights set
    with ``set_item_values``) and the features' encoders. Called on the
    item id embedding table ``U`` (``[num_items, output_dim]``) it returns
    the fused table ``F`` of the same shape, for the whole catalogue at
    once (once per training step), so that the model can use it both to
    embed its inputs and to score items (tied output).

    For an item ``i``, row ``F_i`` is computed in four steps:

    1. its id row: ``u_i = U_i`` if the item's id embedding was trained
       (``id_known[i] = 1``), else (a cold-start item, never seen in
       training) the mean of the known items' rows
       ``mean_{j >= 1, id_known[j] = 1} U_j``, so that a new item starts
       as an "average item" plus its attributes. The mean is a constant
       for the gradient: cold items never move the known items' rows, and
       their own rows get no gradient. A cold item's whole fused row is a
       constant for the gradient too: never trained, it is only ever a
       negative in training, and pushing it down would teach the
       attributes that new items rank low;
    2. one vector per feature, in the order of ``features``: a token
       feature (``"token"``, ``"token_seq"``) is the mean embedding of the
       item's non-padding ids (`CategoricalFeatureEmbedding`); a float
       feature (``"float"``, ``"float_seq"``) is the mean of the
       `SoftOneHotEncoding` (standardised with the feature's ``mean`` and
       ``variance``) of the item's finite values, or the encoder's learned
       missing vector when the item has none;
    3. ``FeatureFusion(fusion)`` of ``[u_i, f_1, ..., f_k]``: a Dense
       projection of the concatenation (``"concat"``) or the sum
       (``"sum"``);
    4. row 0 (padding) is set to zeros.

    ``fuse`` returns the fused table and applies step 1 to an output bias
    from the same draw of the id dropout: cold items, and in training the
    items whose id is dropped, get the known items' mean bias
    (``fused_bias``: the bias at inference).

    A feature is a JSON-serialisable dict: ``name`` (letters, digits,
    ``_``, ``.``, ``-``; it names the feature's weights, e.g.
    ``values_genres``), ``kind`` (``"token"`` or ``"float"``, width 1;
    ``"token_seq"`` or ``"float_seq"``: up to ``width`` values per item),
    ``width`` (the longest row), ``vocabulary_size`` (token kinds: ids
    ``0`` padding, ``1`` out-of-vocabulary, ``2 ..`` tokens; 0 for float
    kinds), ``mean``, ``variance`` (float kinds: the standardisation of
    the values; default 0.0 and 1.0) and ``num_values``, the number of
    values all items hold together (``ItemFeatures.spec_dicts`` gives it).

    Storage. With ``num_values`` (every feature or none), the values are
    ragged: per feature ``values_<name>`` holds every item's values one
    after the other (int32 ids or float32, ``[num_values]``) and
    ``row_splits_<name>`` (int64 ``[num_items + 1]``) where each item's
    start, so the tables' size follows the number of values, whatever the
    widest row. Without it (a model saved before ragged tables), the
    values are padded: ``values_<name>`` is ``[num_items, width]``, 0 (a
    token's padding) or NaN (no value) after a row's end; it is read as
    the same ragged rows. Initially every row is empty (padded: all
    padding). ``id_known`` (float32 ``[num_items]``, initially 1). All
    three are non-trainable; the encoders' and the fusion's weights are
    trainable. All are created by ``build``, so ``set_item_values`` and
    ``set_weights`` work before the first call.

    Cost. Each call gathers and averages ``num_values`` embeddings per
    token feature (a segment mean) and encodes ``num_values`` numbers per
    float feature, not ``num_items x width``: a step costs about the same
    whether the widest row holds 3 values or 20,000.

    Args:
        num_items: int. Catalogue size ``N``, padding id 0 included; at
            least 2.
        output_dim: int. Size ``d`` of the id embeddings and of the fused
            rows.
        features: list of dicts. The item features, see above (may be
            empty: the table is then the fusion of the id rows alone).
        fusion: str. ``"concat"`` or ``"sum"``. Defaults to ``"concat"``.
        soft_one_hot_buckets: int. Buckets of each float feature's
            `SoftOneHotEncoding`. Defaults to ``10``.
        id_dropout: float in ``[0, 1)``. Training only: each step, each
            known item's id row and bias are replaced by the known means
            (as a cold item's are) with this probability, so the model
            learns to rank by attributes alone (DropoutNet). Defaults to
            ``0.0``.
        seed: int or None. Seed of the id dropout. Defaults to ``None``.
        **kwargs: other keyword arguments of ``tf.keras.layers.Layer``
            (``name``, ``dtype``, ``trainable``).

    Call arguments:
        id_table: float tensor ``[num_items, output_dim]``, the item id
            embedding table.
        training: bool or None. In training, ``id_dropout`` treats a
            random share of the known items as cold. Defaults to ``None``.

    Returns:
        The fused table ``[num_items, output_dim]`` in the layer's compute
        dtype, row 0 zeros.

    Example:

    >>> import numpy as np
    >>> import tfrec_tricks.features
    >>> encoder = tfrec_tricks.features.ItemFeatureEncoder(
    ...     num_items=4,
    ...     output_dim=8,
    ...     features=[
    ...         {"name": "genres", "kind": "token_seq", "width": 2,
    ...          "vocabulary_size": 5, "num_values": 4},
    ...         {"name": "price", "kind": "float", "width": 1,
    ...          "mean": 10.0, "variance": 25.0, "num_values": 2},
    ...     ],
    ... )
    >>> encoder.set_item_values(
    ...     {
    ...         # Padded rows: 0 (NaN) is no value ...
    ...         "genres": np.array([[0, 0], [2, 3], [4, 0], [1, 0]]),
    ...         # ... or ragged: (values, row_splits).
    ...         "price": (np.array([9.5, 20.0]), np.array([0, 0, 1, 1, 2])),
    ...     },
    ...     id_known=np.array([1, 1, 1, 0]),  # item 3 is new
    ... )
    >>> encoder.item_values[0].numpy(), encoder.item_row_splits[0].numpy()
    (array([2, 3, 4, 1], dtype=int32), array([0, 0, 2, 3, 4]))
    >>> id_table = np.random.default_rng(0).normal(size=(4, 8))
    >>> fused = encoder(id_table.astype("float32"))
    >>> print(fused.shape, float(np.abs(fused[0]).max()))
    (4, 8) 0.0
    >>> bias = encoder.fused_bias(np.array([0.0, 1.0, 3.0, 7.0], "float32"))
    >>> print(bias.numpy())
    [0. 1. 3. 2.]

    References:
        - [Moreira et al., 2021](https://dl.acm.org/doi/10.1145/3460231.3474255):
          Transformers4Rec (item features: soft one-hot encoding of
          continuous features, concatenation fusion).
        - [Volkovs et al., 2017](https://papers.nips.cc/paper/7081-dropoutnet-addressing-cold-start-in-recommender-systems):
          DropoutNet (input dropout for cold start).
        - [RecTools](https://github.com/MobileTeleSystems/RecTools):
          ``rectools.models.nn.item_net`` (the catalogue's item embeddings
          from ids and features, summed, tied to the output).
    """

    def __init__(
        self,
        num_items: int,
        output_dim: int,
        features: list,
        fusion: str = "concat",
        soft_one_hot_buckets: int = 10,
        id_dropout: float = 0.0,
        seed: int | None = None,
        **kwargs: Any,
    ) -> None:
        # The id table stays float32 for the mean of the known rows.
        kwargs.setdefault("autocast", False)
        super().__init__(**kwargs)
        if not is_integer(num_items) or num_items < 2:
            raise ValueError(
                "`num_items` must be an int >= 2 (id 0 is padding). "
                f"Received: num_items={num_items!r}"
            )
        if not is_integer(output_dim) or output_dim <= 0:
            raise ValueError(
                "`output_dim` must be a positive int. "
                f"Received: output_dim={output_dim!r}"
            )
        if not is_integer(soft_one_hot_buckets) or soft_one_hot_buckets < 1:
            raise ValueError(
                "`soft_one_hot_buckets` must be a positive int. "
                f"Received: soft_one_hot_buckets={soft_one_hot_buckets!r}"
            )
        if not 0.0 <= id_dropout < 1.0:
            raise ValueError(
                "`id_dropout` must be in [0, 1). "
                f"Received: id_dropout={id_dropout!r}"
            )
        if fusion not in FUSION_MODES:
            raise ValueError(
                f"`fusion` must be one of {FUSION_MODES}. "
                f"Received: fusion={fusion!r}"
            )
        features = check_features(features)
        self.num_items = int(num_items)
        self.output_dim = int(output_dim)
        self.features = features
        self.fusion = fusion
        self.soft_one_hot_buckets = int(soft_one_hot_buckets)
        self.id_dropout = float(id_dropout)
        self.seed = seed
        self.fusion_layer = FeatureFusion(
            fusion, self.output_dim, dtype=self.dtype_policy, name="fusion"
        )
        self.feature_encoders = [self._encoder(f) for f in features]

    def _encoder(self, feature: dict) -> tf.keras.layers.Layer:
        """The encoder of one feature (built by ``build``)."""
        if feature["kind"] in TOKEN_KINDS:
            return CategoricalFeatureEmbedding(
                feature["vocabulary_size"],
                self.output_dim,
                dtype=self.dtype_policy,
                name=f"embedding_{feature['name']}",
            )
        return SoftOneHotEncoding(
            self.soft_one_hot_buckets,
            self.output_dim,
            normalization="standardize",
            missing="learned",
            mean=feature["mean"],
            variance=feature["variance"],
            dtype=self.dtype_policy,
            name=f"soft_one_hot_{feature['name']}",
        )

    @property
    def ragged(self) -> bool:
        """Whether the values are stored ragged (the features give
        ``num_values``), else padded ``[num_items, width]``."""
        return bool(self.features) and "num_values" in self.features[0]

    def build(self, input_shape: Any = None) -> None:
        self.item_values = []
        for feature in self.features:
            token = feature["kind"] in TOKEN_KINDS
            if self.ragged:
                shape = (feature["num_values"],)
            else:
                shape = (self.num_items, feature["width"])
            self.item_values.append(
                self.add_weight(
                    name=f"values_{feature['name']}",
                    shape=shape,
                    dtype="int32" if token else "float32",
                    initializer=tf.keras.initializers.Constant(
                        0 if token else float("nan")
                    ),
                    trainable=False,
                    autocast=False,
                )
            )
        self.id_known = self.add_weight(
            name="id_known",
            shape=(self.num_items,),
            dtype="float32",
            initializer="ones",
            trainable=False,
            autocast=False,
        )
        # After id_known: the weights of padded tables keep their order.
        self.item_row_splits = []
        for feature in self.features if self.ragged else ():
            self.item_row_splits.append(
                self.add_weight(
                    name=f"row_splits_{feature['name']}",
                    shape=(self.num_items + 1,),
                    dtype="int64",
                    initializer="zeros",
                    trainable=False,
                    autocast=False,
                )
            )
        for feature, encoder in zip(self.features, self.feature_encoders):
            with tf.name_scope(encoder.name):
                encoder.build((self.num_items, feature["width"]))
        with tf.name_scope(self.fusion_layer.name):
            self.fusion_layer.build(
                [(self.num_items, self.output_dim)] * (len(self.features) + 1)
            )
        self.built = True

    def _ensure_built(self) -> None:
        # `set_item_values` and `fused_bias` may come before any call.
        if not self.built:
            self.build(None)

    def set_item_values(self, values: Any, id_known: Any) -> None:
        """Sets every item's feature values and which ids were trained.

        Everything is checked before anything is assigned.

        Args:
            values: dict. Feature name -> the items' values, one entry per
                feature: ragged, ``(values, row_splits)`` or an object with
                those attributes (``tfrec_tricks.data.RaggedRows``,
                ``tf.RaggedTensor``): ids in ``[1, vocabulary_size)``
                (token kinds) or finite floats, item ``i``'s
                ``values[row_splits[i]:row_splits[i + 1]]``; or padded,
                an array ``[num_items, W]``, 0 (token kinds) or NaN
                (float kinds) for no value. No row may hold more than
                ``width`` values; ragged tables hold exactly
                ``num_values``.
            id_known: array ``[num_items]`` of 0 and 1 (or bool): 1 where
                the item's id embedding was trained.

        Raises:
            ValueError: a feature is missing or unknown, or an array has
                another shape, dtype, number of values or out-of-range ids
                (the message names the feature, the expected and the
                received value).
        """
        self._ensure_built()
        if not isinstance(values, Mapping):
            raise ValueError(
                "`values` must be a dict of feature name -> array. "
                f"Received: values of type {type(values).__name__}"
            )
        names = [f["name"] for f in self.features]
        if sorted(values) != sorted(names):
            raise ValueError(
                f"`values` needs one array per feature: {sorted(names)}. "
                f"Received: keys={sorted(values)}"
            )
        rows = [
            _checked_rows(f, values[f["name"]], self.num_items, self.ragged)
            for f in self.features
        ]
        known = _checked_id_known(id_known, self.num_items)
        for k, (feature, row) in enumerate(zip(self.features, rows)):
            if self.ragged:
                self.item_values[k].assign(row.values)
                self.item_row_splits[k].assign(row.row_splits)
            else:
                self.item_values[k].assign(
                    _padded(row, feature["width"], row.values.dtype)
                )
        self.id_known.assign(known)

    def item_rows(self, index: int) -> tf.RaggedTensor:
        """Feature ``index``'s values as ragged rows ``[num_items, None]``:
        each item's ids (no padding) or finite numbers, partitioned by
        their row ids (``value_rowids``, computed in time linear in the
        values: ``tf.RaggedTensor``'s own, by ``tf.repeat``, costs the
        number of rows times the widest row)."""
        values = tf.convert_to_tensor(self.item_values[index])
        if self.ragged:
            splits = tf.convert_to_tensor(self.item_row_splits[index])
            # Up to the last offset: before set_item_values (the offsets
            # all 0) every row is empty.
            values = values[: splits[-1]]
            row_ids = _value_rowids(splits)
        else:
            if values.dtype.is_integer:
                kept = tf.not_equal(values, 0)
            else:
                kept = tf.math.is_finite(values)
            row_ids = tf.where(kept)[:, 0]
            values = tf.boolean_mask(values, kept)
        return tf.RaggedTensor.from_value_rowids(
            values, row_ids, nrows=self.num_items, validate=False
        )

    def call(self, id_table: Any, training: Any = None) -> tf.Tensor:
        table, _ = self.fuse(id_table, None, training=training)
        return table

    def fuse(
        self, id_table: Any, bias: Any = None, training: Any = None
    ) -> tuple:
        """The fused table and the fused bias of one step, from one draw
        of the id dropout.

        An item whose id is dropped this step loses its id row and its
        bias alike (both become the known items' means, as a cold item's
        are), so that in training it stands exactly where a new item
        will stand at inference: ranked by its attributes alone. The
        rows and bias of never-trained items (``id_known`` 0) are
        constants for the gradient: in training they are only ever
        negatives, and pushing them down would teach the attributes
        that a new item ranks low.

        Args:
            id_table: float ``[num_items, output_dim]``, the item id
                embedding table.
            bias: float ``[num_items]`` output bias, or None.
            training: bool or None. In training, ``id_dropout`` drops a
                random share of the known items' ids.

        Returns:
            ``(table, bias)``: the fused table (as ``call`` returns it)
            and float32 ``[num_items]`` bias (None for None).
        """
        dtype = softmax_dtype(self.compute_dtype)
        table = tf.cast(tf.convert_to_tensor(id_table), dtype)
        if table.shape.rank != 2 or table.shape[-1] != self.output_dim:
            raise ValueError(
                "`id_table` must be the item table [num_items, "
                f"{self.output_dim}]. Received: id_table.shape={table.shape}"
            )
        cold, weights = self._known(table.dtype)
        stand_in = cold
        if self.id_dropout and is_training(training):
            draws = tf.random.uniform([self.num_items], seed=self.seed)
            stand_in = cold | (draws < self.id_dropout)
        id_rows = _with_known_mean(table, stand_in, weights)
        vectors = [tf.cast(id_rows, self.compute_dtype)]
        for index, (feature, encoder) in enumerate(
            zip(self.features, self.feature_encoders)
        ):
            rows = self.item_rows(index)
            if feature["kind"] in TOKEN_KINDS:
                vectors.append(encoder(rows))
            else:
                vectors.append(self._float_vectors(rows, encoder))
        fused = self.fusion_layer(vectors)
        fused = tf.where(cold[:, tf.newaxis], tf.stop_gradient(fused), fused)
        is_padding = tf.equal(tf.range(self.num_items), 0)[:, tf.newaxis]
        fused = tf.where(is_padding, tf.zeros_like(fused), fused)
        if bias is None:
            return fused, None
        bias = self._checked_bias(bias)
        return fused, _with_known_mean(
            bias, stand_in, tf.cast(weights, bias.dtype)
        )

    def _known(self, dtype: Any) -> tuple:
        """``(cold, weights)``: bool ``[N]`` items without a trained id;
        ``dtype`` ``[N]`` 1 for the known items but padding, else 0."""
        id_known = tf.convert_to_tensor(self.id_known)
        cold = tf.equal(id_known, 0.0)
        real = tf.not_equal(tf.range(self.num_items), 0)
        return cold, tf.cast(tf.logical_not(cold) & real, dtype)

    def _float_vectors(
        self, rows: tf.RaggedTensor, encoder: SoftOneHotEncoding
    ) -> tf.Tensor:
        """Mean encoding of each row's values ``[N, None] -> [N, d]``: a
        segment mean over the encodings of the flat values.

        A row without any gets the encoder's missing vector.
        """
        dtype = softmax_dtype(self.compute_dtype)
        # [T, 1]: the encoder drops the trailing 1.
        encoded = tf.cast(encoder(rows.values[:, tf.newaxis]), dtype)
        total = tf.math.unsorted_segment_sum(
            encoded, rows.value_rowids(), self.num_items
        )
        count = tf.cast(rows.row_lengths(), dtype)[:, tf.newaxis]
        missing = tf.cast(encoder(tf.fill([1, 1], float("nan"))), dtype)
        mean = tf.where(count > 0, total / tf.maximum(count, 1.0), missing)
        return tf.cast(mean, self.compute_dtype)

    def fused_bias(self, bias: Any) -> Any:
        """An output bias with cold items' entries set to the known mean,
        as at inference (``fuse`` gives the bias of a training step).

        Args:
            bias: float ``[num_items]`` or None.

        Returns:
            float32 ``[num_items]``: ``bias`` with the entries of items
            whose ``id_known`` is 0 replaced by the mean of the known
            items' entries (padding row 0 excluded from the mean; a
            constant for the gradient); None for None.
        """
        if bias is None:
            return None
        self._ensure_built()
        bias = self._checked_bias(bias)
        cold, weights = self._known(tf.float32)
        return _with_known_mean(bias, cold, weights)

    def _checked_bias(self, bias: Any) -> tf.Tensor:
        bias = tf.cast(tf.convert_to_tensor(bias), tf.float32)
        if bias.shape.rank != 1:
            raise ValueError(
                "`bias` must be a vector [num_items]. "
                f"Received: bias.shape={bias.shape}"
            )
        return bias

    def compute_output_shape(self, input_shape: Any) -> tuple:
        return (self.num_items, self.output_dim)

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(
            {
                "num_items": self.num_items,
                "output_dim": self.output_dim,
                "features": [dict(f) for f in self.features],
                "fusion": self.fusion,
                "soft_one_hot_buckets": self.soft_one_hot_buckets,
                "id_dropout": self.id_dropout,
                "seed": self.seed,
            }
        )
        return config


def _with_known_mean(
    values: tf.Tensor, replaced: tf.Tensor, weights: tf.Tensor
) -> tf.Tensor:
    """``values`` (``[N]`` or ``[N, d]``) with the entries of ``replaced``
    (bool ``[N]``) set to the ``weights``-weighted mean of the entries (the
    known items'), a constant for the gradient."""
    expanded = tf.reshape(weights, [-1] + [1] * (values.shape.rank - 1))
    mean = tf.reduce_sum(values * expanded, axis=0)
    mean /= tf.maximum(tf.reduce_sum(weights), 1.0)
    mean = tf.stop_gradient(mean)
    where = tf.reshape(replaced, tf.shape(expanded))
    return tf.where(where, mean[tf.newaxis, ...], values)


def _value_rowids(row_splits: tf.Tensor) -> tf.Tensor:
    """int64 ``[row_splits[-1]]``: the row of each value, from the rows'
    offsets, in time linear in the values and rows: each value counts the
    rows (after the first) that start at or before it."""
    starts = row_splits[1:-1]
    num_values = row_splits[-1]
    marks = tf.math.unsorted_segment_sum(
        tf.ones_like(starts), starts, num_values + 1
    )
    return tf.cumsum(marks[:num_values])


def _checked_rows(
    feature: dict, value: Any, num_items: int, ragged: bool
) -> RaggedRows:
    """``value`` as the feature's ``RaggedRows``; ValueError if it cannot
    be (see ``ItemFeatureEncoder.set_item_values``)."""
    name = feature["name"]
    token = feature["kind"] in TOKEN_KINDS
    if isinstance(value, tuple) or hasattr(value, "row_splits"):
        rows = _given_rows(name, value, num_items)
    else:
        array = np.asarray(value)
        if not ragged and array.shape != (num_items, feature["width"]):
            raise ValueError(
                f"`values['{name}']` must have shape "
                f"{(num_items, feature['width'])} (num_items, width). "
                f"Received: shape={array.shape}"
            )
        if array.ndim != 2 or array.shape[0] != num_items:
            raise ValueError(
                f"`values['{name}']` must be ragged (values, row_splits) or "
                f"padded [num_items={num_items}, width]. Received: "
                f"shape={array.shape}"
            )
        _check_dtype(name, token, array.dtype)
        rows = RaggedRows.from_dense(array)
    _check_dtype(name, token, rows.values.dtype)
    if token:
        size = feature["vocabulary_size"]
        bad = rows.values[(rows.values < 1) | (rows.values >= size)]
        if bad.size:
            raise ValueError(
                f"`values['{name}']` must be ids in [1, {size}) (0 is "
                f"padding; vocabulary_size {size}). Received: an id "
                f"{int(bad[0])}"
            )
        rows = RaggedRows(rows.values.astype(np.int32), rows.row_splits)
    else:
        if not np.isfinite(rows.values).all():
            raise ValueError(
                f"`values['{name}']` holds a NaN or infinite value among its "
                "ragged values; leave a missing value out of its row"
            )
        rows = RaggedRows(rows.values.astype(np.float32), rows.row_splits)
    widest = int(rows.row_lengths().max(initial=0))
    if widest > feature["width"]:
        raise ValueError(
            f"`values['{name}']`: a row holds {widest} values, more than the "
            f"feature's width {feature['width']}. Received: item "
            f"{int(rows.row_lengths().argmax())}"
        )
    if ragged and rows.values.size != feature["num_values"]:
        raise ValueError(
            f"`values['{name}']` must hold num_values={feature['num_values']} "
            f"values (the size of the layer's table). Received: "
            f"{rows.values.size} values"
        )
    return rows


def _given_rows(name: str, value: Any, num_items: int) -> RaggedRows:
    """Ragged ``(values, row_splits)`` (or an object with both) as
    ``RaggedRows`` of ``num_items`` rows; ValueError if they are not."""
    if isinstance(value, tuple):
        if len(value) != 2:
            raise ValueError(
                f"`values['{name}']` as a tuple is (values, row_splits). "
                f"Received: a tuple of {len(value)}"
            )
        flat, splits = value
    else:
        flat, splits = value.values, value.row_splits
    flat, splits = np.asarray(flat), np.asarray(splits)
    if splits.shape != (num_items + 1,):
        raise ValueError(
            f"`values['{name}']`: row_splits must have shape "
            f"({num_items + 1},) (num_items + 1). Received: "
            f"shape={splits.shape}"
        )
    try:
        return RaggedRows(flat, splits)
    except ValueError as error:
        raise ValueError(f"`values['{name}']`: {error}") from None


def _check_dtype(name: str, token: bool, dtype: Any) -> None:
    """Refuses non-integer ids (token kinds) and non-numbers (floats)."""
    if token and not np.issubdtype(dtype, np.integer):
        raise ValueError(
            f"`values['{name}']` must be integer ids (a token feature). "
            f"Received: dtype={dtype}"
        )
    if not token and (
        np.dtype(dtype) == np.bool_
        or not (
            np.issubdtype(dtype, np.floating)
            or np.issubdtype(dtype, np.integer)
        )
    ):
        raise ValueError(
            f"`values['{name}']` must be numbers (a float feature, NaN for "
            f"no value). Received: dtype={dtype}"
        )


def _padded(rows: RaggedRows, width: int, dtype: Any) -> np.ndarray:
    """``rows`` as a padded ``[N, width]`` table (0 or NaN after a row)."""
    dense = rows.to_dense()
    padding = 0 if np.issubdtype(dtype, np.integer) else np.nan
    table = np.full((rows.num_rows, width), padding, dtype)
    table[:, : dense.shape[1]] = dense
    return table


def _checked_id_known(id_known: Any, num_items: int) -> np.ndarray:
    """``id_known`` as float32 ``[num_items]`` of 0 and 1; else ValueError."""
    array = np.asarray(id_known)
    if array.shape != (num_items,):
        raise ValueError(
            f"`id_known` must have shape ({num_items},) (num_items). "
            f"Received: shape={array.shape}"
        )
    if (
        not (
            array.dtype == bool
            or np.issubdtype(array.dtype, np.integer)
            or np.issubdtype(array.dtype, np.floating)
        )
        or not np.isin(array, (0, 1)).all()
    ):
        raise ValueError(
            "`id_known` must hold 0 and 1 (or bools). Received: values "
            f"{sorted(set(np.unique(array).tolist()))[:5]}"
        )
    return array.astype(np.float32)
