"""The KerasTuner hypermodel over the techniques and the usual settings.

``SequentialRetrievalHyperModel`` declares the search space
(``search_space``; values encoded as ``hyperparameter_values`` says),
turns a trial's values into a ``ModelConfig``, builds the model and trains
it on the trial's batches (``trial_batches``). Custom hyperparameters are
checked value by value before the first trial (``custom_value_checks``).
With item attributes (``item_feature_space``) a trial's data is the data
joined with the attributes it fuses; with categorical per-interaction
features (``token`` columns) it keeps only those its ``features`` names.
"""

import dataclasses
import time
from typing import Any

from tfrec_tricks.tuning.keras_tuner_binding import import_keras_tuner

keras_tuner = import_keras_tuner()

import tensorflow as tf  # noqa: E402

from tfrec_tricks.data.train_windows import merged_stride  # noqa: E402
from tfrec_tricks.heads.registry import tied_softmax_heads  # noqa: E402
from tfrec_tricks.models import (  # noqa: E402
    ModelConfig,
    SequentialRetrievalModel,
)
from tfrec_tricks.models.config import (  # noqa: E402
    AUTO_HEAD,
    HEADS,
)
from tfrec_tricks.training.compiled_steps import steps_per_call  # noqa: E402
from tfrec_tricks.training.feature_selection import (  # noqa: E402
    ALL_FEATURES,
    select_features,
)
from tfrec_tricks.training.head_choice import head_for_data  # noqa: E402
from tfrec_tricks.training.model_options import (  # noqa: E402
    data_model_fields,
)
from tfrec_tricks.training.optimizers import make_optimizer  # noqa: E402
from tfrec_tricks.tuning.custom_value_checks import (  # noqa: E402
    check_custom_values,
)
from tfrec_tricks.tuning.hyperparameter_values import (  # noqa: E402
    NONE,
    decode_value,
    encode_value,
    listed_values,
    value_count,
)

# TUPLE_FIELDS is imported from here by tuning.search: kept importable.
from tfrec_tricks.tuning.hyperparameter_values import (  # noqa: E402
    TUPLE_FIELDS as TUPLE_FIELDS,
)
from tfrec_tricks.tuning.search_space import (  # noqa: E402
    BATCH_SIZE,
    DATA_FIELDS,
    DEFAULT_BATCH_SIZE,
    ITEM_FEATURE_SET,
    SOFTMAX_HEAD_SETTINGS,
    SSE,
    SSE_FIELDS,
    default_space,
)
from tfrec_tricks.tuning.trial_batches import (  # noqa: E402
    example_arrays,
    training_batches,
    validation_batches,
)


class SequentialRetrievalHyperModel(keras_tuner.HyperModel):
    """Searches over the techniques of ``SequentialRetrievalModel``.

    The default search space (every name is a ``ModelConfig`` field except
    ``batch_size``):

    | name | values |
    |---|---|
    | ``encoder`` | gru4rec, sasrec |
    | ``embedding_dim`` | 32, 64, 128 |
    | ``num_layers`` | 1..2 |
    | ``num_heads`` | 1, 2, 4 (SASRec) |
    | ``dropout`` | 0.0..0.5, step 0.1 |
    | ``learning_rate`` | 3e-4..1e-2, log scale (from 5e-3 with windows) |
    | ``batch_size`` | 64, 128, 256 (applied in ``fit``) |
    | ``tie_embeddings`` | True, False |
    | ``sse`` | False, True (not a ``ModelConfig`` field) |
    | ``sse_item_probability`` | 0, 0.01, 0.05, 0.1, 0.2 (SSE on) |
    | ``sse_label_probability`` | 0, 0.01, 0.05, 0.1, 0.2 (SSE on) |
    | ``features`` | "none", each per-interaction feature of the data \
(float, then token), all of them |
    | ``soft_one_hot_buckets`` | 5, 10, 20 (when a float feature is used) |
    | ``item_feature_set`` | "none", each item attribute, all of them \
(with ``item_feature_space``; not a ``ModelConfig`` field) |
    | ``feature_fusion`` | concat, sum (when item attributes are fused) |
    | ``head`` | softmax, cpr, mos, softmax_no_dup |
    | ``cpr_context``, ``cpr_pointer``, ``cpr_mi`` | True, False (CPR) |
    | ``cpr_reranker_ks`` | "none", "20", "100", "500", "20,100,500", the \
sizes below N only (CPR) |
    | ``cpr_base_loss`` | 0.0, 0.1, 0.3, 1.0 (CPR) |
    | ``mos_components`` | 2, 4, 8 (MoS) |

    The CPR and MoS entries are conditional on ``head``, the buckets on
    ``features`` (the values with a float feature: a token feature is
    embedded, not soft one-hot encoded), the SSE probabilities on
    ``sse``, the attention heads on ``encoder``, the fusion on
    ``item_feature_set``: a trial only carries the ones that apply.
    Without item attributes the space has neither ``item_feature_set``
    nor ``feature_fusion``. A fixed or searched ``cosine_temperature``
    or ``num_sampled_negatives`` (settings of the softmax heads alone)
    narrows ``head`` to softmax and softmax_no_dup. Every default
    is what ``tfrec-tricks train`` trains (``ModelConfig``'s and
    ``TrainConfig``'s defaults, SSE off; the head is the one ``--head
    auto`` chooses from ``data``, ``fixed={"head": "auto"}`` fixes it
    there), so the tuners of
    ``tfrec_tricks.tuning.tuners`` start from it: their first trial takes
    the defaults (with ``--item-features``, every attribute, fused as
    ``feature_fusion``'s default says). Tuple fields
    (``cpr_reranker_ks``, ``features``, ``item_feature_set``) are
    comma-joined strings, "none" for the empty tuple.

    Narrow or fix any part: ``fixed`` values become ``Fixed``
    hyperparameters (or, for values a hyperparameter cannot hold such as
    None, plain settings); entries of ``hyperparameters`` replace the
    default definition of the same name, and may add any other
    ``ModelConfig`` field to the search (e.g. ``hp.Choice("num_heads",
    [1, 2])``). Fields of neither keep ``ModelConfig``'s defaults.
    ``features`` names per-interaction features of both kinds, float and
    token (``data.token_feature_names``), as ``--features`` does; a trial
    trains on the data with only the token features it names
    (``ModelConfig.token_features``), and a name the data does not have
    is refused before the first trial. With item attributes, a fixed
    ``features`` names item features too: they fix ``item_feature_set``.

    ``fit`` batches the (unbatched) training dataset it is given with the
    trial's ``batch_size`` after shuffling it, and batches an unbatched
    validation dataset with 512 examples per batch (both by history length
    unless ``bucket_by_length=False``). ``search_data()``
    returns both datasets. The objective (``objective``) is the validation
    NDCG@10, maximised: ``keras_tuner.Objective("val_ndcg@10", "max")``.

    Args:
        data: ``tfrec_tricks.data.InMemoryDataset``. The prepared data: sets
            ``num_items`` and ``max_len``, the training-target counts of the
            sampled objective's logQ correction and the feature statistics;
            its token features are those ``features`` chooses among.
            Without item features when ``item_feature_space`` is given.
        item_graph: array [E, 2] of raw item ids or None. The SSE-Graph
            knowledge graph (e.g. ``Source.item_graph``). Defaults to None.
        fixed: dict or None. ``{name: value}`` for search-space names or
            ``ModelConfig`` fields. Tuples are accepted for the tuple
            fields. Defaults to None.
        hyperparameters: ``keras_tuner.HyperParameters`` or None. Custom
            definitions by name (see above). Defaults to None.
        seed: int. Seed of the training-data shuffle. Defaults to 0.
        compile_options: dict or None. Extra ``model.compile`` arguments,
            e.g. ``{"steps_per_execution": 8}``, or ``{"run_eagerly":
            True}`` for tiny data where tracing costs more than the steps.
            Defaults to None.
        bucket_by_length: bool. Batch histories of similar length together
            (``tfrec_tricks.data.tf_data_pipeline.make_dataset``): faster
            epochs on short-session data. Defaults to True.
        every_position: bool. Train each session's prefixes as one row
            with a target per position (``make_dataset``'s
            ``every_position``): faster SASRec epochs. Defaults to False.
        window_stride: int or None. Train on windows of ``max_len`` items,
            ``window_stride`` targets apart, with a target at every
            position (``make_dataset``'s ``window_stride``; the batch size
            then counts windows). Defaults to None: prefix rows.
        optimizer: str. A key of ``tfrec_tricks.training.optimizers.OPTIMIZERS``
            (its learning rate is the tuned ``learning_rate``). Defaults to
            "adam".
        item_feature_space: ``tfrec_tricks.tuning.item_feature_space.
            ItemFeatureSpace`` or None. The item attributes to choose
            among (``item_feature_set``, ``feature_fusion``). Defaults to
            None: none, the space as before they existed.
        name: str or None. Passed on to ``keras_tuner.HyperModel``.
        tunable: bool. Passed on to ``keras_tuner.HyperModel``.

    Example:

    >>> from tfrec_tricks.data import prepare
    >>> from tfrec_tricks.data.sources import synthetic
    >>> from tfrec_tricks.tuning import (
    ...     SequentialRetrievalHyperModel, import_keras_tuner)
    >>> keras_tuner = import_keras_tuner()
    >>> data = prepare(synthetic.generate(num_users=30, num_items=20,
    ...                                   num_clusters=4)
    ...                .interactions, max_len=5)
    >>> hypermodel = SequentialRetrievalHyperModel(
    ...     data, fixed={"embedding_dim": 8, "head": "cpr"})
    >>> hp = keras_tuner.HyperParameters()
    >>> model = hypermodel.build(hp)
    >>> config = hypermodel.model_config(hp)
    >>> config.head, config.embedding_dim, config.cpr_reranker_ks
    ('cpr', 8, ())
    >>> hypermodel.objective.name
    'val_ndcg@10'

    Then, with a tuner:

    ```python
    tuner = keras_tuner.RandomSearch(
        hypermodel, objective=hypermodel.objective, max_trials=20,
        directory="tuning", project_name="ml-100k")
    tuner.search(**hypermodel.search_data(), epochs=10)
    best = hypermodel.model_config(tuner.get_best_hyperparameters()[0])
    ```
    """

    def __init__(
        self,
        data: Any,
        item_graph: Any = None,
        fixed: dict | None = None,
        hyperparameters: Any = None,
        seed: int = 0,
        compile_options: dict | None = None,
        bucket_by_length: bool = True,
        every_position: bool = False,
        window_stride: int | None = None,
        optimizer: str = "adam",
        item_feature_space: Any = None,
        name: str | None = None,
        tunable: bool = True,
    ):
        super().__init__(name=name, tunable=tunable)
        if item_feature_space is not None and data.item_features is not None:
            raise ValueError(
                "item_feature_space joins the item attributes to id-only "
                "data; the data already has item features. Received: "
                f"{data.item_features.names()}"
            )
        self.data = data
        self.item_feature_space = item_feature_space
        self._joined: dict = {}
        self.bucket_by_length = bucket_by_length
        self.every_position = every_position
        self.window_stride = window_stride
        self.optimizer = optimizer
        merged_stride(every_position, window_stride)  # not both
        self.item_graph = item_graph
        self.fixed = dict(fixed or {})
        self.hyperparameters = hyperparameters
        self.seed = seed
        self.compile_options = dict(compile_options or {})
        custom = {}
        if hyperparameters is not None:
            custom = {hp.name: hp for hp in hyperparameters.space}
        self._split_fixed_features()
        item_values = self._item_feature_values(custom)
        feature_values = None
        if "features" in self.fixed:
            feature_values = [encode_value("features", self.fixed["features"])]
        elif "features" in custom:
            feature_values = [str(v) for v in listed_values(custom["features"])]
        first_head = self._first_head(self._first_data(custom))
        if self.fixed.get("head") == AUTO_HEAD:
            self.fixed["head"] = first_head
        heads = tuple(HEADS)
        if any(
            self.fixed.get(name) is not None or name in custom
            for name in SOFTMAX_HEAD_SETTINGS
        ):
            # Settings of the softmax heads alone (ModelConfig refuses
            # them with another head): search those heads alone.
            heads = tied_softmax_heads()
            if first_head not in heads:
                first_head = "softmax"
        self._space = default_space(
            list(data.feature_names),
            data.num_items,
            head=self.fixed.get("head"),
            train_windows=window_stride is not None,
            first_head=first_head,
            heads=heads,
            item_features=item_values,
            item_features_default=(
                item_feature_space.default_choice()
                if item_feature_space is not None
                else NONE
            ),
            token_features=list(data.token_feature_names),
            feature_values=feature_values,
        )
        space_names = {row[0] for row in self._space}
        fields = {f.name for f in dataclasses.fields(ModelConfig)}
        allowed = (space_names | fields | {BATCH_SIZE}) - set(DATA_FIELDS)
        for what, names in (("fixed", self.fixed), ("hyperparameters", custom)):
            unknown = sorted(set(names) - allowed)
            if unknown:
                raise ValueError(
                    f"{what} names unknown settings (num_items and max_len "
                    f"come from the data). Received: {unknown}; known: "
                    f"{sorted(allowed)}"
                )
        both = sorted(set(self.fixed) & set(custom))
        if both:
            raise ValueError(
                "A setting is both fixed and given a hyperparameter. "
                f"Received: {both}"
            )
        self._custom = custom
        # Values a hyperparameter cannot hold (None, tuples of metric_ks).
        self._settings = {}
        self._fixed_hps = {}
        for key, value in self.fixed.items():
            value = encode_value(key, value)
            if isinstance(value, (bool, int, float, str)):
                self._fixed_hps[key] = value
            else:
                self._settings[key] = value
        # Fixing or narrowing an SSE probability means SSE on (or, fixed at
        # 0 on both sides, off): the probabilities apply only when it is.
        given = [f for f in SSE_FIELDS if f in self.fixed or f in custom]
        if given and SSE not in self.fixed and SSE not in custom:
            self._fixed_hps[SSE] = any(
                f in custom or float(self.fixed[f]) > 0 for f in given
            )
        metric_ks = ModelConfig(num_items=2).metric_ks
        metric_ks = tuple(self._settings.get("metric_ks", metric_ks))
        if not metric_ks:
            raise ValueError(f"metric_ks is empty. Received: {metric_ks!r}")
        self.objective = keras_tuner.Objective(
            f"val_ndcg@{metric_ks[0]}", "max"
        )
        # Fail now, not in every trial, on fixed values ModelConfig rejects.
        self.model_config(keras_tuner.HyperParameters())
        self._check_custom_values()

    def _check_custom_values(self) -> None:
        """Refuses, before the first trial, a value of ``hyperparameters``
        that no trial could train (``--choices dropout=0.1,1.5``): see
        ``custom_value_checks``.

        Raises:
            ValueError: naming the setting, the value and why.
        """
        check_custom_values(
            self._custom,
            {row[0]: row[3] for row in self._rows()},
            self._fixed_hps,
            self.model_config,
        )

    def _split_fixed_features(self) -> None:
        """A fixed ``features`` names per-interaction features, float and
        token, and with item attributes item features too (as
        ``--features`` does): its item features fix ``item_feature_set``,
        and ``all`` becomes the names it takes.

        Raises:
            ValueError: a name the data does not have (``select_features``'
                message: what it has, token features marked), or
                ``item_feature_set`` fixed beside it.
        """
        if "features" not in self.fixed:
            return
        requested = self.fixed["features"]
        if isinstance(requested, str):
            requested = decode_value("features", requested)
        requested = tuple(requested)
        space = self.item_feature_space
        if space is None:
            self.fixed["features"] = self._named_features(requested)
            return
        if ITEM_FEATURE_SET in self.fixed:
            raise ValueError(
                "features names the item features too: fix it or "
                f"{ITEM_FEATURE_SET}, not both. Received: "
                f"features={self.fixed['features']!r}, "
                f"{ITEM_FEATURE_SET}={self.fixed[ITEM_FEATURE_SET]!r}"
            )
        position, item = space.split(
            requested,
            self.data.feature_names,
            space.by_default,
            self.data.token_feature_names,
        )
        self.fixed["features"] = position
        self.fixed[ITEM_FEATURE_SET] = item

    def split_features(self, names: tuple) -> tuple[tuple, tuple]:
        """A ``features`` value as the float and the token features it
        names, as ``train`` reads ``--features`` (``ModelOptions.
        resolve``, ``select_features``).

        Args:
            names: tuple of str. Per-interaction features, or ``("all",)``.

        Returns:
            ``(floats, tokens)``: the float features in the order given
            (``all``: the data's), the token features in the data's order.

        Raises:
            ValueError: a name the data does not have: ``select_features``'
                message, listing what it has (token features marked); an
                item attribute of the search: ``item_feature_set`` fuses
                those.
        """
        space = self.item_feature_space
        items = space.names() if space is not None else []
        selection = select_features(
            names,
            self.data.feature_names,
            items,
            token_available=self.data.token_feature_names,
            item_source=space.table.source if space is not None else "",
        )
        if selection.item and ALL_FEATURES not in names:
            raise ValueError(
                f"features names item features {list(selection.item)}: "
                f"the search fuses those with {ITEM_FEATURE_SET}; features "
                "chooses per-interaction features. Received: "
                f"features={','.join(names)}"
            )
        floats = selection.position
        if ALL_FEATURES not in names:
            floats = tuple(n for n in names if n in self.data.feature_names)
        return floats, selection.token

    def _named_features(self, names: tuple) -> tuple:
        """``names`` as the per-interaction features they select (floats,
        then tokens): ``all`` becomes the names.

        Raises:
            ValueError: a name the data does not have (``split_features``).
        """
        floats, tokens = self.split_features(names)
        return (*floats, *tokens)

    def _item_feature_values(self, custom: dict) -> list[str] | None:
        """The values ``item_feature_set`` can take: the fixed one, the
        custom ones, or ``ItemFeatureSpace.choices``; None without item
        attributes."""
        if self.item_feature_space is None:
            return None
        if ITEM_FEATURE_SET in self.fixed:
            value = self.fixed[ITEM_FEATURE_SET]
            return [encode_value(ITEM_FEATURE_SET, value)]
        if ITEM_FEATURE_SET in custom:
            return [str(v) for v in listed_values(custom[ITEM_FEATURE_SET])]
        return self.item_feature_space.choices()

    def _first_data(self, custom: dict) -> Any:
        """The first trial's data: joined with the item attributes it
        fuses (fixed, the custom default, or what ``train`` fuses)."""
        space = self.item_feature_space
        if space is None:
            return self.data
        value = self.fixed.get(ITEM_FEATURE_SET)
        if value is None and ITEM_FEATURE_SET in custom:
            value = custom[ITEM_FEATURE_SET].default
        if value is None:
            value = space.default_choice()
        value = encode_value(ITEM_FEATURE_SET, value)
        return self.joined_data(decode_value(ITEM_FEATURE_SET, value))

    def joined_data(self, names: tuple) -> Any:
        """``data`` joined with the item attributes ``names`` (none:
        ``data`` itself): a trial's data. Each join is made once.

        Args:
            names: tuple of str. Item features of ``item_feature_space``.

        Returns:
            An ``InMemoryDataset``.

        Raises:
            ValueError: a name the attributes do not have.
        """
        if not names:
            return self.data
        if names not in self._joined:
            self._joined[names] = self.item_feature_space.join(self.data, names)
        return self._joined[names]

    def _first_head(self, data: Any) -> str:
        """The head ``train`` trains on ``data`` with the fixed settings:
        ``--head auto``'s choice (``head_for_data``; the default encoder
        unless fixed), or softmax for data that does not record its repeat
        share."""
        if (
            data.statistics.repeat_share is None
            and self.fixed.get("head") != AUTO_HEAD
        ):
            return "softmax"
        settings = {
            k: decode_value(k, v) if isinstance(v, str) else v
            for k, v in self.fixed.items()
        }
        return head_for_data(settings, data.statistics, data.num_items).head

    # ---------------------------------------------------------- the space

    def _rows(self) -> list:
        rows = [(*row, None)[:4] for row in self._space]
        known = {row[0] for row in rows}
        extra = [n for n in [*self._fixed_hps, *self._custom] if n not in known]
        return rows + [(name, None, None, None) for name in extra]

    def declare(self, hp: Any) -> dict:
        """Declares the search space in ``hp`` and returns the active values.

        Args:
            hp: ``keras_tuner.HyperParameters``.

        Returns:
            dict of the active values by name (hyperparameter encoding).
        """
        values = {}
        for name, kind, arguments, condition in self._rows():
            if name in self._fixed_hps:
                # A fixed setting applies whatever the switches say (e.g.
                # --num-heads while the encoder is searched).
                kind, arguments = "Fixed", {"value": self._fixed_hps[name]}
                condition = None
            elif name in self._custom:
                custom = self._custom[name]
                kind = type(custom).__name__
                arguments = custom.get_config()
                arguments.pop("name")
                arguments.pop("conditions")
            if condition is None:
                value = getattr(hp, kind)(name, **arguments)
            else:
                with hp.conditional_scope(*condition):
                    value = getattr(hp, kind)(name, **arguments)
            if value is not None:
                values[name] = value
        return values

    def model_config(self, hp: Any) -> ModelConfig:
        """The ``ModelConfig`` of a set of hyperparameter values.

        Args:
            hp: ``keras_tuner.HyperParameters``, e.g. from
                ``tuner.get_best_hyperparameters()``; values it lacks take
                their defaults.

        Returns:
            A ``ModelConfig``.
        """
        return self._trial(hp)[0]

    def _trial(self, hp: Any) -> tuple[ModelConfig, Any]:
        """The ``ModelConfig`` of ``hp`` and the data it trains on (joined
        with the item attributes it fuses, with only the token features
        it names)."""
        values = self.declare(hp.copy())
        values.pop(BATCH_SIZE, None)
        values.pop(SSE, None)
        data = self.joined_data(
            decode_value(ITEM_FEATURE_SET, values.pop(ITEM_FEATURE_SET, NONE))
        )
        settings = {**self._settings}
        settings.update({k: decode_value(k, v) for k, v in values.items()})
        floats, tokens = self.split_features(settings.get("features", ()))
        settings["features"] = floats
        data = data.select_token_features(tokens)
        for name in (
            "dropout",
            "head_dropout",
            "sse_item_probability",
            "sse_label_probability",
        ):
            if name in settings:
                settings[name] = round(float(settings[name]), 6)
        if "learning_rate" in settings:
            # Three significant digits: as precise as a search can tell.
            settings["learning_rate"] = float(
                f"{float(settings['learning_rate']):.3g}"
            )
        settings.update(data_model_fields(data))
        config = ModelConfig(
            num_items=data.num_items, max_len=data.max_len, **settings
        )
        return config, data

    def batch_size(self, hp: Any) -> int:
        """The trial's training batch size (``batch_size``)."""
        return int(self.declare(hp.copy()).get(BATCH_SIZE, DEFAULT_BATCH_SIZE))

    # ------------------------------------------------------ build and fit

    def build(self, hp: Any) -> SequentialRetrievalModel:
        """Builds and compiles the trial's model (Adam, its learning rate).

        Args:
            hp: ``keras_tuner.HyperParameters``.

        Returns:
            A compiled ``SequentialRetrievalModel`` with its weights created.

        Raises:
            keras_tuner.errors.FailedTrialError: when the values make an
                invalid ``ModelConfig`` (the trial is marked FAILED and the
                search goes on).
        """
        self.declare(hp)
        try:
            config, data = self._trial(hp)
        except ValueError as error:
            raise keras_tuner.errors.FailedTrialError(str(error)) from error
        # Every trial starts from the search's seed: its initial weights
        # and dropout draws depend on its settings alone, not on how many
        # models this process built before (a resumed search redoes a
        # trial after fewer of them, and would score it otherwise).
        tf.keras.utils.set_random_seed(self.seed)
        model = SequentialRetrievalModel.from_data(
            config, data, item_graph=self.item_graph
        )
        model.compile(
            optimizer=make_optimizer(self.optimizer, config.learning_rate),
            **self._trial_compile_options(hp),
        )
        # Weights exist now, so checkpoints restore at once (Hyperband,
        # get_best_models) rather than deferred.
        sample = {k: v[:2] for k, v in data.train.as_dict().items()}
        model(sample)
        # The optimizer's slots too, so that restoring a checkpoint leaves
        # nothing unmatched.
        model.optimizer.build(model.trainable_variables)
        return model

    def _trial_compile_options(self, hp: Any) -> dict:
        """``compile_options``, their steps per execution one when the
        trial's epoch is shorter (``training.compiled_steps``)."""
        options = dict(self.compile_options)
        requested = options.get("steps_per_execution")
        if isinstance(requested, int) and requested > 1:
            # The batches fit will train on (bucketing makes more than
            # rows / batch size), so a trial compiles as its run would.
            batches, _ = self._training_batches(hp, self.data.train.as_dict())
            options["steps_per_execution"] = steps_per_call(
                requested, int(batches.cardinality())
            )
        return options

    def fit(self, hp: Any, model: tf.keras.Model, *args, **kwargs):
        """Trains with the trial's batch size.

        The training data (first positional argument or ``x``) is an
        unbatched ``tf.data.Dataset`` of examples (a batched one is
        unbatched first) or a dict of arrays; it is shuffled and batched
        with ``batch_size``. An unbatched ``validation_data`` is batched
        with 512. Everything else goes to ``model.fit``.

        Args:
            hp: ``keras_tuner.HyperParameters``.
            model: the model from ``build``.
            *args: ``model.fit`` positional arguments.
            **kwargs: ``model.fit`` keyword arguments.

        Returns:
            The ``History`` of ``model.fit``.
        """
        args = list(args)
        if args:
            x = args.pop(0)
        elif "x" in kwargs:
            x = kwargs.pop("x")
        else:
            raise ValueError(
                "fit needs the training data. Received: no positional "
                f"argument and no x; keyword arguments {sorted(kwargs)}"
            )
        kwargs.pop(BATCH_SIZE, None)
        train, _ = self._training_batches(hp, x)
        if kwargs.get("validation_data") is not None:
            kwargs["validation_data"] = validation_batches(
                kwargs["validation_data"], self.bucket_by_length
            )
        return model.fit(train, *args, **kwargs)

    def _training_batches(self, hp: Any, x: Any) -> tuple:
        """The shuffled training batches of ``x`` and their count."""
        return training_batches(
            example_arrays(x),
            self.batch_size(hp),
            seed=self.seed,
            bucket_by_length=self.bucket_by_length,
            every_position=self.every_position,
            window_stride=self.window_stride,
        )

    def searched_names(self) -> list[str]:
        """The hyperparameters with more than one value: what is searched.

        Returns:
            list of names, in declaration order (conditional ones included).
        """
        hp = keras_tuner.HyperParameters()
        self.declare(hp)
        return [h.name for h in hp.space if value_count(h) > 1]

    def estimate_epoch_seconds(self, steps: int = 20) -> float:
        """Seconds of one training epoch of the defaults, from a few steps.

        Builds the first trial's model (every default), runs two steps to
        trace it, times ``steps`` more and scales them to an epoch.

        Args:
            steps: int. Steps to time. Defaults to 20.

        Returns:
            float. The estimated seconds per epoch.
        """
        hp = keras_tuner.HyperParameters()
        model = self.build(hp)
        batches, per_epoch = self._training_batches(
            hp, self.data.train.as_dict()
        )
        batches = batches.repeat()
        options = {"epochs": 1, "verbose": 0}
        model.fit(batches, steps_per_epoch=2, **options)
        steps = max(1, min(steps, per_epoch))
        start = time.perf_counter()
        model.fit(batches, steps_per_epoch=steps, **options)
        return (time.perf_counter() - start) / steps * per_epoch

    def search_data(self) -> dict:
        """``x`` and ``validation_data`` for ``tuner.search(**...)``.

        Returns:
            dict with the unbatched training and validation datasets.
        """
        return {
            "x": tf.data.Dataset.from_tensor_slices(self.data.train.as_dict()),
            "validation_data": tf.data.Dataset.from_tensor_slices(
                self.data.validation.as_dict()
            ),
        }
