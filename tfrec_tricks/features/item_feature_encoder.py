"""The fused item table: item id embeddings plus the items' attributes."""

from collections.abc import Mapping
from typing import Any

import tensorflow as tf

from tfrec_tricks.data.item_features.item_file import TOKEN_KINDS
from tfrec_tricks.features.categorical_feature_embedding import (
    CategoricalFeatureEmbedding,
)
from tfrec_tricks.features.feature_fusion import FUSION_MODES, FeatureFusion
from tfrec_tricks.features.item_feature_checks import (
    check_features,
    checked_id_known,
    checked_rows,
    padded_table,
)
from tfrec_tricks.features.item_fusion import ItemFusion, with_known_mean
from tfrec_tricks.layers.common import is_integer, is_training, softmax_dtype
from tfrec_tricks.layers.soft_one_hot_encoding import SoftOneHotEncoding
from tfrec_tricks.serialization import register


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
       their own rows get no gradient;
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
    whether the widest row holds 3 values or 20,000. A step that reads
    only some items (the sampled objective) fuses only theirs
    (``fuse_rows``, or ``fusion_step`` for several reads of one step):
    it averages their values alone.

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
            checked_rows(f, values[f["name"]], self.num_items, self.ragged)
            for f in self.features
        ]
        known = checked_id_known(id_known, self.num_items)
        for k, (feature, row) in enumerate(zip(self.features, rows)):
            if self.ragged:
                self.item_values[k].assign(row.values)
                self.item_row_splits[k].assign(row.row_splits)
            else:
                self.item_values[k].assign(
                    padded_table(row, feature["width"], row.values.dtype)
                )
        self.id_known.assign(known)

    def item_rows(self, index: int, ids: Any = None) -> tf.RaggedTensor:
        """Feature ``index``'s values as ragged rows: each item's ids (no
        padding) or finite numbers, partitioned by their row ids
        (``value_rowids``, computed in time linear in the values:
        ``tf.RaggedTensor``'s own, by ``tf.repeat``, costs the number of
        rows times the widest row).

        Args:
            index: int. The feature's position in ``features``.
            ids: int ``[M]`` item ids, or None for every item. Defaults to
                None.

        Returns:
            ``[num_items, None]``, or ``[M, None]``: the rows of ``ids``,
            in their order (read in time linear in their values).
        """
        values = tf.convert_to_tensor(self.item_values[index])
        nrows = self.num_items
        if ids is not None:
            ids = tf.cast(ids, tf.int64)
            nrows = tf.size(ids, out_type=tf.int64)
        if self.ragged:
            splits = tf.convert_to_tensor(self.item_row_splits[index])
            if ids is None:
                # Up to the last offset: before set_item_values (the
                # offsets all 0) every row is empty.
                values = values[: splits[-1]]
            else:
                # Each id's [start, end) of the values, one after another.
                positions = tf.ragged.range(
                    tf.gather(splits, ids), tf.gather(splits, ids + 1)
                )
                values = tf.gather(values, positions.values)
                splits = positions.row_splits
            row_ids = _value_rowids(splits)
        else:
            if ids is not None:
                values = tf.gather(values, ids)
            if values.dtype.is_integer:
                kept = tf.not_equal(values, 0)
            else:
                kept = tf.math.is_finite(values)
            row_ids = tf.where(kept)[:, 0]
            values = tf.boolean_mask(values, kept)
        return tf.RaggedTensor.from_value_rowids(
            values, row_ids, nrows=nrows, validate=False
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
        will stand at inference: ranked by its attributes alone.
        Never-trained items (``id_known`` 0) stay in the training
        softmax as negatives: keeping their fused rows out of the
        gradient raised them over the trained items at inference and
        cost ml-100k's test NDCG@10 6%, for no new item in a top 10
        (``benchmarks/results/cold-items``).

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
        return self.fusion_step(id_table, bias, training).table()

    def fuse_rows(
        self,
        id_table: Any,
        ids: Any,
        bias: Any = None,
        training: Any = None,
    ) -> tuple:
        """The rows of ``fuse`` at ``ids``, computed for those items only.

        Equal to gathering ``fuse``'s table and bias at ``ids`` (the same
        draw of the id dropout, the same known means over the whole
        catalogue), but the attributes averaged are only those of
        ``ids``: a step that reads a few thousand rows of a million items
        costs its rows. Several reads of one step share its draw through
        ``fusion_step``.

        Args:
            id_table: float ``[num_items, output_dim]``.
            ids: int item ids, any shape.
            bias: float ``[num_items]`` or None.
            training: bool or None.

        Returns:
            ``(rows, bias)``: ``ids.shape + [output_dim]`` and float32
            ``ids.shape`` (None for None).
        """
        return self.fusion_step(id_table, bias, training).rows(ids)

    def fusion_step(
        self, id_table: Any, bias: Any = None, training: Any = None
    ) -> "ItemFusion":
        """One step's fusion, read whole (``table``) or by id (``rows``).

        It draws the step's id dropout and holds the known items' means,
        so that every read of the step sees the same items dropped.

        Args:
            id_table: float ``[num_items, output_dim]``, the item id
                embedding table.
            bias: float ``[num_items]`` output bias, or None.
            training: bool or None.

        Returns:
            An ``ItemFusion``.
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
        if bias is not None:
            bias = self._checked_bias(bias)
        return ItemFusion(self, table, bias, stand_in, weights)

    def _fused_vectors(
        self, id_rows: tf.Tensor, rows: Any, ids: Any
    ) -> tf.Tensor:
        """``FeatureFusion`` of the id rows and of each feature's vector
        of ``rows(index)``, the padding row zeros (``ids`` the rows'
        item ids, None: all)."""
        vectors = [tf.cast(id_rows, self.compute_dtype)]
        for index, (feature, encoder) in enumerate(
            zip(self.features, self.feature_encoders)
        ):
            feature_rows = rows(index)
            if feature["kind"] in TOKEN_KINDS:
                vectors.append(encoder(feature_rows))
            else:
                num_rows = self.num_items if ids is None else tf.size(ids)
                vectors.append(
                    self._float_vectors(feature_rows, encoder, num_rows)
                )
        fused = self.fusion_layer(vectors)
        if ids is None:
            ids = tf.range(self.num_items)
        is_padding = tf.equal(ids, 0)[:, tf.newaxis]
        return tf.where(is_padding, tf.zeros_like(fused), fused)

    def _known(self, dtype: Any) -> tuple:
        """``(cold, weights)``: bool ``[N]`` items without a trained id;
        ``dtype`` ``[N]`` 1 for the known items but padding, else 0."""
        id_known = tf.convert_to_tensor(self.id_known)
        cold = tf.equal(id_known, 0.0)
        real = tf.not_equal(tf.range(self.num_items), 0)
        return cold, tf.cast(tf.logical_not(cold) & real, dtype)

    def _float_vectors(
        self, rows: tf.RaggedTensor, encoder: SoftOneHotEncoding, num_rows: Any
    ) -> tf.Tensor:
        """Mean encoding of each row's values ``[R, None] -> [R, d]``: a
        segment mean over the encodings of the flat values.

        A row without any gets the encoder's missing vector.
        """
        dtype = softmax_dtype(self.compute_dtype)
        # [T, 1]: the encoder drops the trailing 1.
        encoded = tf.cast(encoder(rows.values[:, tf.newaxis]), dtype)
        total = tf.math.unsorted_segment_sum(
            encoded, rows.value_rowids(), num_rows
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
        return with_known_mean(bias, cold, weights)

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
