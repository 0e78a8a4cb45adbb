"""New items for a trained model, without retraining (``--add-items``).

A model trained with item features (``ModelConfig.item_features``) ranks
an item it never trained, a cold item (``id_known`` 0), by its attributes:
its id row is the trained items' mean row, its bias their mean bias
(``ItemFeatureEncoder``). ``extend_catalogue`` uses this to add items to a
trained model: it builds the same model for ``num_items + n`` items,
copies every weight, and fills the ``n`` new rows of the weights that
hold one row per item. The served scores of the old items are unchanged
(checked before the model is returned), and the new items can be
recommended and read in histories.

Only a model whose score of an item depends on that item and the history
alone can be extended exactly (``check_extensible``): the softmax heads
(``softmax``, ``softmax_no_dup``) and Softmax-CPR without rerankers. A
CPR reranker rescores the top-k of the whole catalogue (a new item that
enters it pushes an old item out and changes that item's score), and a
mixture of softmaxes normalises over the catalogue: both are refused.
"""

import dataclasses
import json
import os
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import tensorflow as tf

from tfrec_tricks.data.item_features.encoding import (
    FIRST_TOKEN_ID,
    OOV_ID,
    PAD_ID,
    ItemFeatureSpec,
    check_row_widths,
)
from tfrec_tricks.data.item_features.item_file import (
    TOKEN_KINDS,
    ItemFeatureTable,
    read_item_features,
)
from tfrec_tricks.data.item_features.ragged_rows import RaggedRows
from tfrec_tricks.errors import DataError
from tfrec_tricks.export.serving_module import load_item_vocabulary
from tfrec_tricks.heads.registry import head_spec
from tfrec_tricks.models import SequentialRetrievalModel

# How close the old items' logits must stay (float32 sums over a longer
# table may add in another order).
_TOLERANCE = {"rtol": 1e-5, "atol": 1e-4}


@dataclasses.dataclass(frozen=True)
class ExtendedCatalogue:
    """What ``extend_catalogue`` returns.

    Attributes:
        model: the new ``SequentialRetrievalModel`` (``num_items + n``).
        items: list of str. Its raw item ids by contiguous id, padding
            first: the old catalogue, then the added items.
        added: tuple of str. The added raw ids, in file order.
        kept: tuple of str. Items of the file that were in the catalogue
            already: they keep their trained attributes.
    """

    model: Any
    items: list
    added: tuple
    kept: tuple


def check_extensible(config: Any) -> None:
    """Raises ValueError unless new items can be added to the model exactly.

    Args:
        config: the model's ``ModelConfig``.

    Raises:
        ValueError: the model has no item features (a new item would have
            nothing to rank by), or its head scores an item against the
            rest of the catalogue (``"mos"``, ``"cpr"`` with rerankers).
    """
    if not config.item_features:
        raise ValueError(
            "--add-items needs a model trained with item features (train "
            "with --item-features FILE or --features NAME ...): a new item "
            "ranks by its attributes, and this model has none. Received: "
            "item_features=()"
        )
    refusal = head_spec(config.head).extension_refusal(config)
    if refusal is not None:
        raise ValueError(refusal)


def load_feature_specs(path: str) -> list:
    """The ``ItemFeatureSpec`` s of a run's ``item_features.json``.

    Args:
        path: str. The file: a JSON list of ``ItemFeatureSpec.to_dict()``.

    Returns:
        list of ``ItemFeatureSpec``, in the run's feature order.

    Raises:
        DataError: the file is missing or does not hold such a list.
    """
    if not os.path.isfile(path):
        raise DataError(
            f"{path} is missing: a run trained with item features keeps "
            "their vocabularies there, and --add-items encodes new items "
            "with them. Retrain the run. Received: path="
            f"{path!r}"
        )
    try:
        with open(path, encoding="utf-8") as handle:
            document = json.load(handle)
        if not isinstance(document, list):
            raise TypeError(f"a {type(document).__name__}, not a list")
        return [ItemFeatureSpec.from_dict(d) for d in document]
    except (ValueError, TypeError, AttributeError) as error:
        raise DataError(
            f"{path}: not a list of item feature specs "
            f"({type(error).__name__}: {error})"
        ) from None


def extend_catalogue(
    model: Any, vocabulary: Any, specs: Sequence, item_file: Any
) -> ExtendedCatalogue:
    """The model with the new items of ``item_file`` added, not retrained.

    The new model is built from the model's ``ModelConfig`` with
    ``num_items + n``; every weight is copied. The weights that hold a row
    per item (found by their shape, which grows with ``num_items``) keep
    their old rows and get new ones:

    - ``values_<name>``: the new items' attributes, encoded with the run's
      vocabularies (an unknown token is out-of-vocabulary, id 1; floats as
      given: the layer standardises them with the run's mean and
      variance; no value is no value). Ragged tables (``row_splits_<name>``)
      get the new items' values after the old ones and their row offsets
      (``num_values`` grows by the values added). Padded tables (a model
      saved before ragged tables) get new rows, 0 or NaN for no value; a
      list longer than the feature's width widens the table (the old rows
      are padded, which changes none of their vectors). Either way a
      longer list raises the feature's ``width``;
    - ``id_known``: 0, so the new items are cold items;
    - the logQ candidate probability (sampled objective): 0, never a
      training target;
    - an SSE-Graph's row pointers: new items have no edges;
    - every other float weight with a row per item (``[num_items, ...]``:
      the item id table, an untied output table, the output bias): the
      mean of the trained items' rows (``id_known`` 1, padding left out),
      so a new item starts as the average trained item. For the id table
      and the bias this is what a cold item reads anyway (the layer
      replaces its row and bias by that mean); an untied output table
      (``--untied``) holds no attributes, so there a new item is scored
      as the average trained item.

    Any other weight whose shape depends on ``num_items`` is refused.
    Finally the old items' logits of both models are compared on a few
    histories; a difference is an error.

    Args:
        model: a trained ``SequentialRetrievalModel`` with item features.
        vocabulary: its raw item ids (see ``load_item_vocabulary``).
        specs: sequence of ``ItemFeatureSpec`` (or their dicts): the run's
            features (``load_feature_specs``).
        item_file: str (a RecBole ``.item`` file, ``read_item_features``)
            or an ``ItemFeatureTable``. Items already in the catalogue
            are ignored (they keep their trained attributes); columns the
            model does not read are ignored. A new item's list longer than
            the rest is warned of, and one of more than
            ``MAX_ROW_VALUES`` values refused
            (``data.item_features.encoding.check_row_widths``).

    Returns:
        An ``ExtendedCatalogue``.

    Raises:
        ValueError: the model cannot be extended (``check_extensible``),
            or ``specs`` disagree with the model's features.
        DataError: the file is refused (``read_item_features``), lacks a
            feature the model reads or has it of another kind, or adds no
            item.

    Example:

    >>> import numpy as np
    >>> from tfrec_tricks.data.item_features.encoding import ItemFeatureSpec
    >>> from tfrec_tricks.models import ModelConfig, SequentialRetrievalModel
    >>> color = {"name": "color", "kind": "token", "width": 1,
    ...          "vocabulary_size": 4}
    >>> model = SequentialRetrievalModel(
    ...     ModelConfig(num_items=3, max_len=4, item_features=(color,)))
    >>> table = ItemFeatureTable({"color": "token"}, {
    ...     "a": {"color": "red"}, "c": {"color": "blue"}, "d": {}})
    >>> extended = extend_catalogue(
    ...     model, ["[PAD]", "a", "b"],
    ...     [ItemFeatureSpec("color", "token", 1, ("red", "blue"))], table)
    >>> extended.items, extended.added, extended.kept
    (['[PAD]', 'a', 'b', 'c', 'd'], ('c', 'd'), ('a',))
    >>> encoder = extended.model.item_features
    >>> encoder.item_values[0].numpy()[3:, 0].tolist()  # blue; no value
    [3, 0]
    >>> encoder.id_known.numpy().tolist()
    [1.0, 1.0, 1.0, 0.0, 0.0]
    """
    config = model.config
    check_extensible(config)
    items = load_item_vocabulary(vocabulary)
    if len(items) != config.num_items:
        raise ValueError(
            "The vocabulary must have one raw id per item id of the model "
            f"(num_items={config.num_items}). Received: {len(items)} raw ids"
        )
    specs = _checked_specs(specs, config.item_features)
    table = item_file
    if not isinstance(table, ItemFeatureTable):
        table = read_item_features(os.fspath(item_file))
    _check_columns(table, specs)
    known = set(items[1:])
    added = tuple(item for item in table.rows if item not in known)
    kept = tuple(item for item in table.rows if item in known)
    if not added:
        raise DataError(
            f"{table.source or 'the item table'} adds no item: its "
            f"{len(kept)} items are all in the catalogue already (they "
            "keep their trained attributes). Received: items "
            f"{list(kept)[:5]}{' ...' if len(kept) > 5 else ''}"
        )
    values = {spec.name: _encoded(spec, table, added) for spec in specs}
    new_config = dataclasses.replace(
        config,
        num_items=config.num_items + len(added),
        item_features=tuple(
            _extended_feature(feature, values[feature["name"]])
            for feature in config.item_features
        ),
    )
    new_model = SequentialRetrievalModel(
        new_config, item_graph_num_edges=model.item_graph_num_edges
    )
    _build(model)
    _build(new_model)
    _copy_weights(model, new_model, _row_fillers(model, values))
    _check_old_scores(model, new_model)
    return ExtendedCatalogue(new_model, [*items, *added], added, kept)


def _checked_specs(specs: Sequence, features: Sequence) -> list:
    """``specs`` as ``ItemFeatureSpec`` s, checked against the model's
    feature dicts: same names, kinds and vocabulary sizes, in order."""
    specs = [
        s if isinstance(s, ItemFeatureSpec) else ItemFeatureSpec.from_dict(s)
        for s in specs
    ]
    described = [(s.name, s.kind, s.vocabulary_size) for s in specs]
    expected = [
        (f["name"], f["kind"], f.get("vocabulary_size", 0)) for f in features
    ]
    if described != expected:
        raise ValueError(
            "The run's item feature specs (item_features.json) disagree with "
            f"the model's item features {expected} (name, kind, vocabulary "
            f"size). Received: {described}"
        )
    return specs


def _check_columns(table: ItemFeatureTable, specs: list) -> None:
    """Refuses a table without a feature the model reads, or with one of
    another kind; other columns are ignored."""
    source = table.source or "the item table"
    has = ", ".join(f"{n}:{k}" for n, k in table.kinds.items()) or "none"
    for spec in specs:
        kind = table.kinds.get(spec.name)
        if kind is None:
            raise DataError(
                f"{source}: the model reads the item feature "
                f"{spec.name}:{spec.kind}, but the file has no such column. "
                f"Received: columns {has}"
            )
        if kind != spec.kind:
            raise DataError(
                f"{source}: the model was trained with {spec.name}:"
                f"{spec.kind}, but the file has {spec.name}:{kind}; give the "
                f"column the run's type. Received: columns {has}"
            )


def _encoded(
    spec: ItemFeatureSpec, table: ItemFeatureTable, added: tuple
) -> RaggedRows:
    """The ``added`` items' values of one feature, as the run encodes them
    (``data.item_features.encoding``): token ids (2 + the token's index in the
    vocabulary, 1 unknown) or float32; an item without a value has an
    empty row. Checks the rows' widths (``check_row_widths``)."""
    lists = []
    for item in added:
        value = table.rows[item].get(spec.name, ())
        lists.append(tuple(value) if isinstance(value, tuple) else (value,))
    check_row_widths(
        spec.name,
        [(item, len(row)) for item, row in zip(added, lists) if row],
        table,
    )
    if spec.kind in TOKEN_KINDS:
        ids = {t: FIRST_TOKEN_ID + k for k, t in enumerate(spec.vocabulary)}
        lists = [[ids.get(t, OOV_ID) for t in tokens] for tokens in lists]
        return RaggedRows.from_lists(lists, np.int32)
    return RaggedRows.from_lists(lists, np.float32)


def _extended_feature(feature: dict, added: RaggedRows) -> dict:
    """A feature dict of the model for the extended catalogue: the width
    of its longest row, and (ragged tables) the values added."""
    longest = int(added.row_lengths().max(initial=0))
    extended = {**feature, "width": max(feature["width"], longest)}
    if "num_values" in feature:
        extended["num_values"] = feature["num_values"] + added.values.size
    return extended


def _build(model: Any) -> None:
    """Creates every weight: a model rebuilt by ``load_model`` creates
    (and restores) its head's on its first call."""
    config = model.config
    model(
        {
            "history": tf.ones([1, 1], tf.int32),
            **{f: tf.zeros([1, 1]) for f in config.position_inputs},
        },
        training=False,
    )


def _row_fillers(model: Any, values: Mapping) -> dict:
    """The per-item weights ``model`` fills its own way -> ``fill(old,
    new_shape)``, which returns the new array (old rows kept, new rows
    filled). Keyed by ``id(variable)``: the weights are the model's own,
    alive as long as it is (Keras 3 variables have no ``ref()``).
    (Any other per-item weight gets the trained items' mean row,
    ``_mean_row_filler``.)"""
    encoder = model.item_features

    def zeros(old: np.ndarray, shape: tuple) -> np.ndarray:
        return _with_rows(old, shape, np.zeros((), old.dtype))

    fillers = {id(encoder.id_known): zeros}
    if model.candidate_probability is not None:
        fillers[id(model.candidate_probability)] = zeros
    for k, feature in enumerate(encoder.features):
        added = values[feature["name"]]
        weight = encoder.item_values[k]
        if encoder.ragged:
            fillers[id(weight)] = _flat_values_filler(added)
            splits = encoder.item_row_splits[k]
            fillers[id(splits)] = _row_splits_filler(added)
        else:
            fillers[id(weight)] = _values_filler(added.to_dense())
    for sse in (model.item_sse, model.label_sse):
        if sse is not None and sse.graph_indptr is not None:
            fillers[id(sse.graph_indptr)] = _no_edges
    return fillers


def _mean_row_filler(model: Any) -> Any:
    """Fills a float ``[num_items, ...]`` weight with the mean of its
    trained items' rows."""
    known = model.item_features.id_known.numpy() == 1
    known[0] = False

    def fill(old: np.ndarray, shape: tuple) -> np.ndarray:
        mean = old[known].mean(axis=0) if known.any() else 0.0
        return _with_rows(old, shape, mean)

    return fill


def _with_rows(old: np.ndarray, shape: tuple, fill: Any) -> np.ndarray:
    """``old`` with rows appended up to ``shape[0]``, each ``fill``."""
    new = np.empty(shape, old.dtype)
    new[: len(old)] = old
    new[len(old) :] = fill
    return new


def _values_filler(encoded: np.ndarray) -> Any:
    """Fills ``values_<name>``: old rows padded to the new width, then the
    new items' ``encoded`` rows padded too."""

    def fill(old: np.ndarray, shape: tuple) -> np.ndarray:
        padding = PAD_ID if np.issubdtype(old.dtype, np.integer) else np.nan
        new = np.full(shape, padding, old.dtype)
        new[: len(old), : old.shape[1]] = old
        new[len(old) :, : encoded.shape[1]] = encoded
        return new

    return fill


def _flat_values_filler(added: RaggedRows) -> Any:
    """Fills a ragged ``values_<name>``: the old values, then the new
    items'."""

    def fill(old: np.ndarray, shape: tuple) -> np.ndarray:
        return np.concatenate([old, added.values.astype(old.dtype)])

    return fill


def _row_splits_filler(added: RaggedRows) -> Any:
    """Fills ``row_splits_<name>``: the old offsets, then the new items'
    after the old values."""

    def fill(old: np.ndarray, shape: tuple) -> np.ndarray:
        return np.concatenate([old, old[-1] + added.row_splits[1:]])

    return fill


def _no_edges(old: np.ndarray, shape: tuple) -> np.ndarray:
    """CSR row pointers ``[N + 1]`` extended for items without edges."""
    return _with_rows(old, shape, old[-1])


def _copy_weights(model: Any, new_model: Any, fillers: dict) -> None:
    """Copies ``model``'s weights into ``new_model``'s (built in the same
    order); a weight whose shape changed goes through its filler."""
    old_weights, new_weights = model.weights, new_model.weights
    old_names = _weight_names(model)
    new_names = _weight_names(new_model)
    if old_names != new_names:
        changed = [(a, b) for a, b in zip(old_names, new_names) if a != b]
        raise ValueError(
            "The model rebuilt for the new catalogue has other weights than "
            f"the trained one. Received: {len(new_names)} weights for "
            f"{len(old_names)}, first differences {changed[:2]}"
        )
    mean_rows = _mean_row_filler(model)
    n = model.config.num_items
    for old, new in zip(old_weights, new_weights):
        value = old.numpy()
        if tuple(old.shape) != tuple(new.shape):
            fill = fillers.get(id(old))
            # As tuples and a tf.DType: Keras 3 variables have a tuple
            # shape and a dtype name.
            per_item = (
                tf.as_dtype(old.dtype).is_floating
                and len(old.shape) >= 1
                and old.shape[0] == n
                and tuple(old.shape[1:]) == tuple(new.shape[1:])
            )
            if fill is None and per_item:
                fill = mean_rows
            if fill is None:
                raise ValueError(
                    f"--add-items does not know how to extend the weight "
                    f"{old.name!r}, whose shape depends on the catalogue's "
                    f"size. Received: shape {tuple(old.shape)} -> "
                    f"{tuple(new.shape)}"
                )
            value = fill(value, tuple(new.shape))
        new.assign(value)


def _weight_names(model: Any) -> list:
    """``(name, dtype)`` of each weight, the model's own name (which Keras
    numbers: ``..._1``) left out."""
    prefix = f"{model.name}/"
    # Keras 3 names a variable by its leaf, its path says where it is.
    return [
        (getattr(w, "path", w.name).removeprefix(prefix), w.dtype)
        for w in model.weights
    ]


def _check_old_scores(model: Any, new_model: Any) -> None:
    """Raises ValueError if the old items' logits of a few histories
    differ between the models."""
    config = model.config
    n = config.num_items
    width = min(config.max_len, n - 1)
    history = np.zeros((3, width), np.int32)
    history[1, :width] = np.arange(1, width + 1)
    history[2, :width] = np.arange(n - 1, n - 1 - width, -1)
    inputs = {
        "history": tf.constant(history),
        **{f: tf.zeros(history.shape) for f in config.position_inputs},
    }
    old = model(inputs, training=False).numpy()
    new = new_model(inputs, training=False).numpy()[:, :n]
    if not np.allclose(new, old, **_TOLERANCE):
        difference = float(np.abs(new - old).max())
        raise ValueError(
            "The extended model scores the old items differently; it is "
            f"not exported. Received: a largest difference of {difference}"
            f" with head={config.head!r}"
        )
