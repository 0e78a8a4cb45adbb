"""The KerasTuner search space over the techniques and the usual settings."""

import dataclasses
import time
from typing import Any

from tfrec_tricks.tuning.keras_tuner_binding import import_keras_tuner

keras_tuner = import_keras_tuner()

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from tfrec_tricks.config_fields import field_default  # noqa: E402
from tfrec_tricks.data.pipeline import batch_arrays  # noqa: E402
from tfrec_tricks.data.prefix_merging import merge_prefixes  # noqa: E402
from tfrec_tricks.data.train_windows import (  # noqa: E402
    merged_stride,
    train_windows,
)
from tfrec_tricks.models import (  # noqa: E402
    ModelConfig,
    SequentialRetrievalModel,
)
from tfrec_tricks.models.config import (  # noqa: E402
    AUTO_HEAD,
    HEADS,
    SOFTMAX_HEADS,
    default_head_dropout,
)
from tfrec_tricks.training.head_choice import head_for_data  # noqa: E402
from tfrec_tricks.training.optimizers import make_optimizer  # noqa: E402
from tfrec_tricks.training.train_config import (  # noqa: E402
    TrainConfig,
    default_learning_rate,
)

# ModelConfig fields set from the data, never tuned.
DATA_FIELDS = ("num_items", "max_len")
# Fields whose value is a tuple; as hyperparameters they are comma-joined
# strings, "none" for the empty tuple.
TUPLE_FIELDS = ("cpr_reranker_ks", "features")
NONE = "none"
# Not ModelConfig fields: the training batch size, and the SSE switch that
# the SSE probabilities are conditional on (off: both are 0).
BATCH_SIZE = "batch_size"
SSE = "sse"
SSE_FIELDS = ("sse_item_probability", "sse_label_probability")
# The SSE paper sweeps 0.01-0.2 (0: that side off).
SSE_PROBABILITIES = (0.0, 0.01, 0.05, 0.1, 0.2)
DEFAULT_BATCH_SIZE = field_default(TrainConfig, "batch_size")
EVAL_BATCH_SIZE = 512
RERANKER_CHOICES = ("none", "20", "100", "500", "20,100,500")


def _default(name: str) -> Any:
    """``ModelConfig``'s default of ``name``: the first trial's value."""
    return field_default(ModelConfig, name)


#: The encoders of the default search: ``"hstu"`` is left out until it is
#: measured beside them, so that a default search stays the one measured.
SEARCHED_ENCODERS = ("gru4rec", "sasrec")

#: ModelConfig fields that only the softmax heads take: set, they narrow
#: the searched heads to ``SOFTMAX_HEADS``.
SOFTMAX_HEAD_SETTINGS = ("cosine_temperature", "num_sampled_negatives")


def _default_space(
    feature_names: list[str],
    num_items: int,
    head: str | None = None,
    train_windows: bool = False,
    first_head: str = "softmax",
    heads: tuple = HEADS,
) -> list:
    """``(name, kind, arguments, (parent, parent_values) or None)`` rows.

    The first trial must train what ``train`` trains, and three of its
    defaults depend on other settings: the head on the data
    (``first_head``, ``--head auto``'s choice), the head dropout on a fixed
    ``head`` (0.3 for cpr, 0 for mos), the learning rate on the protocol
    (``train_windows``: 5e-3, else 1e-3). ``heads`` are the heads searched
    (the softmax heads alone with cosine scores).

    The rows, in this order: the encoder's, the optimisation's, the
    regularisers' (tied embeddings, SSE), the input features' and the
    head's.
    """
    return [
        *_encoder_rows(),
        *_optimisation_rows(train_windows),
        *_regularisation_rows(),
        *_feature_rows(feature_names),
        *_head_rows(num_items, head, first_head, heads),
    ]


def _encoder_rows() -> list:
    """The encoder, its size and its dropout."""
    return [
        ("encoder", "Choice", {"values": list(SEARCHED_ENCODERS)}, None),
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
            ("encoder", ["sasrec"]),
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


def _feature_choices(feature_names: list[str]) -> list[str]:
    """The choices: "none", each feature, and all when there are several."""
    features = [NONE, *feature_names]
    if len(feature_names) > 1:
        features.append(",".join(feature_names))
    return features


def _feature_rows(feature_names: list[str]) -> list:
    """The input features, and their buckets when there are any."""
    features = _feature_choices(feature_names)
    return [
        ("features", "Choice", {"values": features}),
        (
            "soft_one_hot_buckets",
            "Choice",
            {
                "values": [5, 10, 20],
                "default": _default("soft_one_hot_buckets"),
            },
            ("features", [f for f in features if f != NONE]),
        ),
    ]


def _reranker_choices(num_items: int) -> list[str]:
    """The ``RERANKER_CHOICES`` whose sizes are all below ``num_items``."""
    return [
        choice
        for choice in RERANKER_CHOICES
        if choice == NONE or all(int(k) < num_items for k in choice.split(","))
    ]


def _head_rows(
    num_items: int,
    head: str | None,
    first_head: str = "softmax",
    heads: tuple = HEADS,
) -> list:
    """The head (one of ``heads``, ``first_head`` first), the CPR settings,
    the head dropout and the MoS size: those of the heads in ``heads``
    (KerasTuner would otherwise set the head to a value outside the
    choice to activate a condition)."""
    rows = [
        (
            "head",
            "Choice",
            {"values": list(heads), "default": first_head},
        ),
        *_cpr_rows(num_items),
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
            ("head", ["cpr", "mos"]),
        ),
        (
            "mos_components",
            "Choice",
            {"values": [2, 4, 8], "default": _default("mos_components")},
            ("head", ["mos"]),
        ),
    ]
    return [row for row in rows if len(row) < 4 or set(row[3][1]) & set(heads)]


def _cpr_rows(num_items: int) -> list:
    """The Softmax-CPR settings, active when the head is "cpr"."""
    rerankers = _reranker_choices(num_items)
    cpr = ("head", ["cpr"])
    return [
        ("cpr_context", "Boolean", {"default": _default("cpr_context")}, cpr),
        ("cpr_pointer", "Boolean", {"default": _default("cpr_pointer")}, cpr),
        (
            "cpr_reranker_ks",
            "Choice",
            {
                "values": rerankers,
                "default": "100" if "100" in rerankers else NONE,
            },
            cpr,
        ),
        ("cpr_mi", "Boolean", {"default": _default("cpr_mi")}, cpr),
        (
            "cpr_base_loss",
            "Choice",
            {
                "values": sorted(
                    {0.0, 0.1, 0.3, 1.0, _default("cpr_base_loss")}
                ),
                "default": _default("cpr_base_loss"),
            },
            cpr,
        ),
    ]


def encode_value(name: str, value: Any) -> Any:
    """A ModelConfig value as a hyperparameter value (tuples as strings)."""
    if name in TUPLE_FIELDS and not isinstance(value, str):
        return ",".join(str(v) for v in value) or NONE
    return value


def decode_value(name: str, value: Any) -> Any:
    """A hyperparameter value as a ModelConfig value (see ``encode_value``)."""
    if name not in TUPLE_FIELDS:
        return value
    if value in (NONE, ""):
        return ()
    parts = [part.strip() for part in str(value).split(",")]
    return (
        tuple(int(p) for p in parts)
        if name == "cpr_reranker_ks"
        else tuple(parts)
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
    | ``features`` | "none", each feature of the data, all of them |
    | ``soft_one_hot_buckets`` | 5, 10, 20 (when features are used) |
    | ``head`` | softmax, cpr, mos, softmax_no_dup |
    | ``cpr_context``, ``cpr_pointer``, ``cpr_mi`` | True, False (CPR) |
    | ``cpr_reranker_ks`` | "none", "20", "100", "500", "20,100,500", the \
sizes below N only (CPR) |
    | ``cpr_base_loss`` | 0.0, 0.1, 0.3, 1.0 (CPR) |
    | ``mos_components`` | 2, 4, 8 (MoS) |

    The CPR and MoS entries are conditional on ``head``, the buckets on
    ``features``, the SSE probabilities on ``sse``, the attention heads on
    ``encoder``: a trial only carries the ones that apply. A fixed or
    searched ``cosine_temperature`` or ``num_sampled_negatives`` (settings
    of the softmax heads alone) narrows ``head`` to softmax and
    softmax_no_dup. Every default
    is what ``tfrec-tricks train`` trains (``ModelConfig``'s and
    ``TrainConfig``'s defaults, SSE off; the head is the one ``--head
    auto`` chooses from ``data``, ``fixed={"head": "auto"}`` fixes it
    there), so the tuners of
    ``tfrec_tricks.tuning.tuners`` start from it: their first trial takes
    the defaults. Tuple fields
    (``cpr_reranker_ks``, ``features``) are comma-joined strings, "none"
    for the empty tuple.

    Narrow or fix any part: ``fixed`` values become ``Fixed``
    hyperparameters (or, for values a hyperparameter cannot hold such as
    None, plain settings); entries of ``hyperparameters`` replace the
    default definition of the same name, and may add any other
    ``ModelConfig`` field to the search (e.g. ``hp.Choice("num_heads",
    [1, 2])``). Fields of neither keep ``ModelConfig``'s defaults.

    ``fit`` batches the (unbatched) training dataset it is given with the
    trial's ``batch_size`` after shuffling it, and batches an unbatched
    validation dataset with 512 examples per batch (both by history length
    unless ``bucket_by_length=False``). ``search_data()``
    returns both datasets. The objective (``objective``) is the validation
    NDCG@10, maximised: ``keras_tuner.Objective("val_ndcg@10", "max")``.

    Args:
        data: ``tfrec_tricks.data.InMemoryDataset``. The prepared data: sets
            ``num_items`` and ``max_len``, the training-target counts of the
            sampled objective's logQ correction and the feature statistics.
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
            (``tfrec_tricks.data.pipeline.make_dataset``): faster epochs on
            short-session data. Defaults to True.
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
        name: str or None. Passed on to ``keras_tuner.HyperModel``.
        tunable: bool. Passed on to ``keras_tuner.HyperModel``.

    Example:

    >>> from tfrec_tricks.data import prepare, synthetic
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
        name: str | None = None,
        tunable: bool = True,
    ):
        super().__init__(name=name, tunable=tunable)
        self.data = data
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
        first_head = self._first_head(data)
        if self.fixed.get("head") == AUTO_HEAD:
            self.fixed["head"] = first_head
        custom = {}
        if hyperparameters is not None:
            custom = {hp.name: hp for hp in hyperparameters.space}
        heads = HEADS
        if any(
            self.fixed.get(name) is not None or name in custom
            for name in SOFTMAX_HEAD_SETTINGS
        ):
            # Settings of the softmax heads alone (ModelConfig refuses
            # them with another head): search those heads alone.
            heads = SOFTMAX_HEADS
            if first_head not in heads:
                first_head = "softmax"
        self._space = _default_space(
            list(data.feature_names),
            data.num_items,
            head=self.fixed.get("head"),
            train_windows=window_stride is not None,
            first_head=first_head,
            heads=heads,
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
        that no trial could train (``--choices dropout=0.1,1.5``).

        The defaults check only each setting's first value; a bad later
        one would fail every trial that drew it (KerasTuner prints the
        traceback and retries, then gives up). Each value is checked with
        the defaults for the rest, and with the head (or other switch) it
        applies under when it is conditional.

        Raises:
            ValueError: naming the setting, the value and why.
        """
        conditions = {row[0]: row[3] for row in self._rows()}
        for name, custom in self._custom.items():
            condition = conditions.get(name)
            for value in _listed_values(custom):
                hp = keras_tuner.HyperParameters()
                hp.values[name] = value
                if condition is not None:
                    parent, parent_values = condition
                    fixed_parent = self._fixed_hps.get(parent)
                    if fixed_parent is not None:
                        if fixed_parent not in parent_values:
                            continue  # never active: never trained
                    else:
                        hp.values[parent] = parent_values[0]
                try:
                    if name == BATCH_SIZE:
                        _check_batch_size(value)
                    else:
                        self.model_config(hp)
                except (ValueError, TypeError) as error:
                    raise ValueError(
                        f"--choices {name}: the value {value!r} cannot "
                        f"train ({error}). Received: {name}={value!r}"
                    ) from None

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
        values = self.declare(hp.copy())
        values.pop(BATCH_SIZE, None)
        values.pop(SSE, None)
        settings = {**self._settings}
        settings.update({k: decode_value(k, v) for k, v in values.items()})
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
        return ModelConfig(
            num_items=self.data.num_items, max_len=self.data.max_len, **settings
        )

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
            config = self.model_config(hp)
        except ValueError as error:
            raise keras_tuner.errors.FailedTrialError(str(error)) from error
        # Every trial starts from the search's seed: its initial weights
        # and dropout draws depend on its settings alone, not on how many
        # models this process built before (a resumed search redoes a
        # trial after fewer of them, and would score it otherwise).
        tf.keras.utils.set_random_seed(self.seed)
        model = SequentialRetrievalModel.from_data(
            config, self.data, item_graph=self.item_graph
        )
        model.compile(
            optimizer=make_optimizer(self.optimizer, config.learning_rate),
            **self.compile_options,
        )
        # Weights exist now, so checkpoints restore at once (Hyperband,
        # get_best_models) rather than deferred.
        sample = {k: v[:2] for k, v in self.data.train.as_dict().items()}
        model(sample)
        # The optimizer's slots too, so that restoring a checkpoint leaves
        # nothing unmatched.
        model.optimizer.build(model.trainable_variables)
        return model

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
            validation = kwargs["validation_data"]
            if isinstance(validation, dict) or _is_unbatched(validation):
                kwargs["validation_data"] = batch_arrays(
                    self._arrays(validation),
                    EVAL_BATCH_SIZE,
                    bucket_by_length=self.bucket_by_length,
                )
        return model.fit(train, *args, **kwargs)

    def _training_batches(self, hp: Any, x: Any) -> tuple:
        """The shuffled training batches of ``x`` and their count."""
        arrays = self._arrays(x)
        if self.every_position:
            arrays = merge_prefixes(arrays)
        elif self.window_stride is not None:
            arrays = train_windows(arrays, self.window_stride)
        batch_size = self.batch_size(hp)
        batches = batch_arrays(
            arrays,
            batch_size,
            shuffle=True,
            seed=self.seed,
            bucket_by_length=self.bucket_by_length,
            count_targets=self.window_stride is None,
        )
        rows = len(arrays["history"])
        return batches, -(-rows // batch_size)

    def searched_names(self) -> list[str]:
        """The hyperparameters with more than one value: what is searched.

        Returns:
            list of names, in declaration order (conditional ones included).
        """
        hp = keras_tuner.HyperParameters()
        self.declare(hp)
        return [h.name for h in hp.space if _value_count(h) > 1]

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

    @staticmethod
    def _arrays(x: Any) -> dict:
        """The examples of a dict of arrays or a dataset, as arrays."""
        if isinstance(x, dict):
            return {name: np.asarray(value) for name, value in x.items()}
        if not isinstance(x, tf.data.Dataset):
            raise ValueError(
                "Expected a tf.data.Dataset of example dicts or a dict of "
                f"arrays. Received: {type(x).__name__}"
            )
        if not _is_unbatched(x):
            x = x.unbatch()
        batches = list(x.batch(65536).as_numpy_iterator())
        if not batches:
            raise ValueError("The dataset given to fit has no examples.")
        return {
            name: np.concatenate([batch[name] for batch in batches])
            for name in batches[0]
        }


def _listed_values(hp: Any) -> list:
    """The values of a hyperparameter to check: every choice, both ends of
    a range."""
    kind = type(hp).__name__
    if kind == "Fixed":
        return [hp.value]
    if kind == "Boolean":
        return [False, True]
    if kind == "Choice":
        return list(hp.values)
    return [hp.min_value, hp.max_value]


def _check_batch_size(value: Any) -> None:
    """Raises ValueError unless ``value`` is a positive integer."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(
            f"batch_size must be a positive integer. Received: "
            f"batch_size={value!r}"
        )


def _value_count(hp: Any) -> float:
    """How many values a hyperparameter can take (inf for a float range)."""
    kind = type(hp).__name__
    if kind == "Fixed":
        return 1
    if kind == "Boolean":
        return 2
    if kind == "Choice":
        return len(hp.values)
    if hp.max_value == hp.min_value:
        return 1
    if kind == "Int":
        return (hp.max_value - hp.min_value) // (hp.step or 1) + 1
    return float("inf")


def _is_unbatched(dataset: Any) -> bool:
    """True for a dataset whose ``history`` elements are [L] (not [B, L])."""
    if not isinstance(dataset, tf.data.Dataset):
        return False
    spec = dataset.element_spec
    if not isinstance(spec, dict) or "history" not in spec:
        raise ValueError(
            "Expected dataset elements to be dicts with a 'history' entry. "
            f"Received: element_spec={spec}"
        )
    return spec["history"].shape.rank == 1
