"""The plain, serialisable configuration of a sequential retrieval model."""

import dataclasses
import json

from tfrec_tricks.config_fields import (
    check_field_types,
    check_fields,
    document_fields,
    field_default,
    option,
)
from tfrec_tricks.heads.head_specs import CPR_HEAD_DROPOUT  # noqa: F401
from tfrec_tricks.heads.registry import (
    head_spec,
    registered_heads,
    tied_softmax_heads,
)
from tfrec_tricks.models import encoder_specs as _builtin_encoders  # noqa: F401
from tfrec_tricks.models.encoder_registry import (
    encoder_spec,
    registered_encoders,
)
from tfrec_tricks.objectives import objective_specs as _builtin_objectives  # noqa: F401
from tfrec_tricks.objectives.objective_registry import (
    objective_spec,
    objectives_reading,
    registered_objectives,
)

# ``tfrec_tricks.features.feature_fusion.FUSION_MODES``, written out: that
# module (and its package) import TensorFlow, and this one must not (the
# command line builds its flags from ModelConfig before TensorFlow loads).
# tests/models/test_config.py checks that the two are equal.
FUSION_MODES = ("concat", "sum")

#: The registered encoders' names, live (``models.encoder_registry``): the
#: built-in gru4rec, sasrec and hstu, then any registered since.
ENCODERS = registered_encoders()
#: The registered heads' names, live (``tfrec_tricks.heads.registry``): the
#: built-in softmax, cpr, mos and softmax_no_dup, then any registered since.
HEADS = registered_heads()
#: A training run's ``--head auto``, its default: the run chooses one of
#: ``HEADS`` from its data (``tfrec_tricks.training.head_choice``); a model has
#: a real head, and ``ModelConfig`` defaults to ``softmax``.
AUTO_HEAD = "auto"
#: The registered objectives' names, live
#: (``objectives.objective_registry``): the built-in full and sampled,
#: then any registered since.
OBJECTIVES = registered_objectives()
CPR_MERGES = ("replace", "add")
SASREC_NORMS = ("post", "pre")


def default_head_dropout(head: str) -> float:
    """The head dropout ``head`` trains with when none is given: its
    spec's (``HeadSpec.default_dropout``: 0.3 for cpr, measured,
    ``CPR_HEAD_DROPOUT``; 0 for the others), 0 for a name no head has."""
    return head_spec(head).default_dropout if head in HEADS else 0.0


def as_trained(model: dict) -> dict:
    """``model`` (a ``ModelConfig.to_dict()``, possibly recorded by an
    earlier version) with the head dropout it trains with: a None is the
    head's default, so None and that rate given explicitly are one model.

    >>> as_trained({"head": "cpr", "head_dropout": None})["head_dropout"]
    0.3
    >>> as_trained({"head": "softmax", "head_dropout": 0.0})["head_dropout"]
    0.0
    """
    if model.get("head_dropout", 0.0) is not None or "head" not in model:
        return model
    return {**model, "head_dropout": default_head_dropout(model["head"])}


def _distinct_item_features(item_features: tuple, features: tuple) -> bool:
    """Whether each item feature is a dict with a name, no two alike, and
    none named as a per-position feature."""
    names = [f.get("name") for f in item_features]
    return (
        all(isinstance(n, str) and n for n in names)
        and len(set(names)) == len(names)
        and not set(names) & set(features)
    )


def _distinct_token_features(token_features: tuple, others: tuple) -> bool:
    """Whether each token feature is a dict with a name and a vocabulary
    size >= 2, no two names alike nor any of ``others``."""
    names = [f.get("name") for f in token_features]
    sizes = [f.get("vocabulary_size") for f in token_features]
    return (
        all(isinstance(n, str) and n for n in names)
        and all(isinstance(v, int) and v >= 2 for v in sizes)
        and len(set(names)) == len(names)
        and not set(names) & set(others)
    )


@document_fields
@dataclasses.dataclass
class ModelConfig:
    """What to build; JSON round-trips through ``to_dict`` / ``from_dict``.

    Every technique is a switch here; arrays the model needs (the item
    graph of SSE-Graph, the item frequencies of the logQ correction, the
    statistics of standardised features) are constructor arguments of
    ``SequentialRetrievalModel`` instead, and travel in its weights. The
    fields with a flag are ``tfrec-tricks train``'s model options.

    Example:

    >>> config = ModelConfig(num_items=100, head="cpr", cpr_reranker_ks=[20])
    >>> again = ModelConfig.from_json(config.to_json())
    >>> config.cpr_reranker_ks, again == config
    ((20,), True)
    """

    num_items: int = option(
        help="N, the item vocabulary size including padding id 0.",
        cli=False,
    )
    max_len: int = option(
        50,
        "history length the model reads (SASRec's positional table has "
        "max_len rows).",
        check="positive",
        cli=False,
    )
    embedding_dim: int = option(64, "item embedding size d.", check="positive")
    embedding_init_stddev: float = option(
        0.1,
        "the item table starts N(0, s^2); Keras' default, uniform in "
        "+-0.05, leaves a full-softmax model on a loss plateau for its "
        "first epochs.",
        check="positive",
        cli=False,
    )
    encoder: str = option(
        "gru4rec",
        "sequence encoder: GRU4Rec, SASRec or HSTU (pointwise-attention "
        "blocks, Zhai et al. 2024).",
        choices=ENCODERS,
    )
    hidden_dim: int | None = option(
        None,
        "encoder state size (projected back to d when it differs, as the "
        "logits are scored against the d-sized item table); None means d.",
        check="positive",
        cli=False,
    )
    num_layers: int = option(
        1,
        "stacked encoder layers (GRUs or transformer blocks).",
        check="positive",
    )
    num_heads: int = option(
        2,
        "SASRec and HSTU attention heads; must divide the encoder width.",
        check="positive",
    )
    dropout: float = option(
        0.2,
        "dropout on item embeddings and encoder outputs (SASRec and HSTU: "
        "also inside the blocks).",
        check="probability",
    )
    attention_dropout: float = option(
        0.2,
        "SASRec and HSTU dropout on attention weights.",
        check="probability",
    )
    ffn_dim: int | None = option(
        None,
        "SASRec feed-forward inner size; None means the hidden size (the "
        "SASRec paper's; RecBole's default is 256).",
        check="positive",
        metavar="N",
        default_text="the hidden size",
    )
    # post is the default, pre not measured: docs/decisions.md#sasrec-norm.
    sasrec_norm: str = option(
        "post",
        "SASRec block layout: post (RecBole's: layer norm after each "
        "residual sum, GELU) or pre (the paper's code and SASRec+'s: layer "
        "norm before attention and feed-forward, ReLU, embeddings scaled "
        "by sqrt(d), a final layer norm).",
        choices=SASREC_NORMS,
    )
    head_dropout: float | None = option(
        None,
        "dropout on the query projections of the cpr and mos heads (None: "
        "the head's default).",
        check="probability",
        default_text="0.3 with --head cpr (measured), 0 with mos",
    )
    # Tied: +11% over untied on yoochoose-100k (untied wins on ml-1m):
    # docs/decisions.md#tied-embeddings.
    tie_embeddings: bool = option(
        True,
        "one item table for inputs and outputs; False adds a separate "
        "[N, d] output table.",
        flag="--untied",
        switch_help="a separate [N, d] output item table",
        const=False,
    )
    output_bias: bool = option(
        True,
        "per-item output bias b in h E^T + b.",
        flag="--no-output-bias",
        switch_help="no per-item output bias",
        const=False,
    )
    cosine_temperature: float | None = option(
        None,
        "softmax heads: score each item by the cosine of h and its row "
        "of E, divided by T, plus its bias (L2-normalised embeddings; "
        "HSTU's retrieval uses T = 0.05). Off: the dot product h E^T + b.",
        check="positive",
        metavar="T",
        default_text="off (dot product)",
    )
    sse_item_probability: float = option(
        0.0,
        "SSE on input item ids (SSE-Graph when the data has an item "
        "graph), training only; 0 disables it.",
        check="probability",
        metavar="P",
    )
    sse_label_probability: float = option(
        0.0,
        "SSE on target ids, training only; like label smoothing with "
        "epsilon about p. 0 disables it.",
        check="probability",
        metavar="P",
    )
    sse_graph_rho: float = option(
        10.0,
        "SSE-Graph neighbour : other ratio rho.",
        check="at_least_one",
        metavar="RHO",
    )
    sse_seed: int | None = option(
        None, "seed of the SSE replacements.", cli=False
    )
    features: tuple[str, ...] = option(
        (),
        "per-position float features of the batch (e.g. time_gap rating), "
        "each soft one-hot encoded and added to the item embeddings.",
        metavar="NAME",
        nargs="*",
    )
    item_features: tuple[dict, ...] = option(
        (),
        "the item attributes the item representation fuses: one "
        "``ItemFeatureEncoder`` feature dict each (name, kind, width, "
        "vocabulary_size, mean, variance), from the data's "
        "``ItemFeatures.spec_dicts()``.",
        cli=False,
    )
    token_features: tuple[dict, ...] = option(
        (),
        "the categorical per-interaction features (``token`` columns), "
        "each embedded and added to the item embedding at its position: "
        "one dict each (name, vocabulary_size, vocabulary), from the "
        "data's ``InteractionTokenSpec.model_dict()``.",
        cli=False,
    )
    # sum: +5.6% validation, +20.4% test on ml-100k where concat is level
    # (3 seeds; docs/decisions.md#feature-fusion).
    feature_fusion: str = option(
        "sum",
        "how item attributes join the item id embedding: sum (RecTools') "
        "or concat (then a projection to d, Transformers4Rec's).",
        choices=FUSION_MODES,
    )
    item_id_dropout: float = option(
        0.0,
        "with item features: each training step treats this share of the "
        "items as new, their id embedding replaced by the mean one "
        "(DropoutNet), so the attributes learn to rank items never seen "
        "in training.",
        check="probability",
        metavar="P",
    )
    soft_one_hot_buckets: int = option(
        10,
        "soft one-hot buckets P of each feature.",
        check="positive",
        metavar="P",
    )
    # auto's thresholds: docs/decisions.md#head-auto.
    head: str = option(
        "softmax",
        "output head: softmax (tied logits), cpr (Softmax-CPR), mos "
        "(Mixture of Softmax), softmax_no_dup (softmax, history items "
        "removed at inference), or auto: train chooses one from the share "
        "of training targets that repeat an item of their history (below "
        "0.01: softmax_no_dup; 0.01 to 0.05: softmax; from 0.05: cpr, or "
        "softmax with sasrec, whose attention copies by itself).",
        choices=registered_heads(AUTO_HEAD),
        default_text="auto (a ModelConfig built in Python: softmax)",
    )
    cpr_context: bool = option(
        True,
        "CPR context partition C.",
        flag="--cpr-no-context",
        switch_help="CPR without the context partition",
        const=False,
    )
    cpr_pointer: bool = option(
        True,
        "CPR pointer partition P.",
        flag="--cpr-no-pointer",
        switch_help="CPR without the pointer partition",
        const=False,
    )
    cpr_reranker_ks: tuple[int, ...] = option(
        (100,),
        "CPR reranker sizes k, e.g. 20,100,500; 'none' for no reranker "
        "(each k at most the number of items).",
        check="positive",
        flag="--cpr-rerankers",
        metavar="K,K,...",
    )
    cpr_mi: bool = option(
        False,
        "CPR with multiple input hidden states (Mi: the last min(2, "
        "num_layers) encoder layers).",
        const=True,
        switch_help="CPR with multiple input hidden states (Mi)",
    )
    cpr_merge: str = option(
        "replace",
        "CPR partition logits replace (the reference) or add to the base "
        "logit.",
        choices=CPR_MERGES,
    )
    # Started as the softmax, SASRec + CPR trains where random projections
    # stall: docs/decisions.md#cpr-start-as-softmax.
    cpr_start_as_softmax: bool = option(
        True,
        "start the CPR head as the tied softmax it extends (identity base "
        "projection, pointer at zero); False gives the reference's random "
        "projections.",
        flag="--cpr-random-init",
        switch_help="initialise the CPR projections at random, as the "
        "reference does",
        const=False,
    )
    # 1 keeps the base ranking new items (the paper's 0 loses most of them
    # on retailrocket-20k): docs/decisions.md#cpr-base-loss.
    cpr_base_loss: float = option(
        1.0,
        "CPR: weight of a plain softmax loss on the head's base logits "
        "f_V . e + b, added to the CPR loss; it keeps the base ranking new "
        "items. 0 gives the paper's CPR (as RecBole's).",
        check="non_negative",
        metavar="W",
    )
    cpr_rerank_within_candidates: bool = option(
        False,
        "CPR under --objective sampled: in training, the rerankers choose "
        "their top-k among the sampled candidates and the history, not "
        "the catalogue (no pass over every item; serving stays exact).",
        const=True,
        switch_help="CPR rerankers choose among the sampled candidates and "
        "the history in training (--objective sampled)",
    )
    mos_components: int = option(
        4,
        "mixture of softmax components K.",
        check="positive",
        metavar="K",
    )
    # sampled (with adagrad) for million-item catalogues:
    # docs/decisions.md#large-catalogues.
    objective: str = option(
        "full",
        "full: softmax cross-entropy over the whole catalogue; sampled: "
        "in-batch sampled softmax (TFRS Retrieval semantics).",
        choices=OBJECTIVES,
    )
    num_sampled_negatives: int | None = option(
        None,
        "sampled objective: score each query against its target and K "
        "negatives drawn uniformly from the catalogue per step, shared by "
        "the batch (HSTU's 128 negatives), instead of the batch's other "
        "targets; softmax heads. None: the in-batch candidates.",
        check="positive",
        metavar="K",
        default_text="in-batch candidates",
    )
    num_hard_negatives: int | None = option(
        None,
        "sampled objective: keep only the N hardest negatives per query; "
        "None keeps all.",
        check="positive",
        metavar="N",
        default_text="all",
    )
    remove_accidental_hits: bool = option(
        True,
        "sampled objective: in-batch negatives equal to the query's target "
        "are left out.",
        cli=False,
    )
    logq_correction: bool = option(
        True,
        "sampled objective: subtract log p(candidate) (popularity of "
        "training targets).",
        cli=False,
    )
    # On as Keras users expect; off is the same run, faster
    # (docs/decisions.md#train-metrics).
    train_metrics: bool = option(
        True,
        "rank the training targets too, for the training NDCG/HR/MRR of "
        "the progress bar and the history: one more pass over each "
        "batch's logits. Validation is always ranked.",
        flag="--no-train-metrics",
        switch_help="no ranking metrics on training batches (TFRS's "
        "compute_metrics=not training): faster steps",
        const=False,
    )
    learning_rate: float = option(
        1e-3, "Adam's learning rate.", check="positive", cli=False
    )
    metric_ks: tuple[int, ...] = option(
        (10,),
        "cut-offs reported by the model's metrics.",
        check="positive",
        cli=False,
    )

    def __post_init__(self):
        if isinstance(self.features, str):
            self.features = (self.features,)
        if isinstance(self.cpr_reranker_ks, int):
            self.cpr_reranker_ks = (self.cpr_reranker_ks,)
        check_field_types(self)
        self.features = tuple(str(f) for f in self.features)
        self.item_features = tuple(dict(f) for f in self.item_features)
        self.token_features = tuple(dict(f) for f in self.token_features)
        self.metric_ks = tuple(int(k) for k in self.metric_ks)
        self.cpr_reranker_ks = tuple(int(k) for k in self.cpr_reranker_ks)
        try:
            check_fields(self)
        except ValueError as error:
            raise ValueError(f"Invalid model config: {error}") from None
        if self.num_items < 2:
            raise ValueError(
                "Invalid model config: num_items must be at least 2 (padding "
                f"and one item). Received: num_items={self.num_items}"
            )
        width = self.hidden_dim or self.embedding_dim
        # name: (holds, the rule a reader needs to fix it)
        checks = {
            "num_heads": (
                self.encoder not in ENCODERS
                or not encoder_spec(self.encoder).attention
                or width % self.num_heads == 0,
                f"must divide the encoder width {width}",
            ),
            "metric_ks": (bool(self.metric_ks), "must not be empty"),
            "features": (
                len(set(self.features)) == len(self.features)
                and all(self.features),
                "must be distinct, non-empty names",
            ),
            "item_features": (
                _distinct_item_features(self.item_features, self.features),
                "must be feature dicts with distinct names, none of them "
                "a per-position feature's",
            ),
            "token_features": (
                _distinct_token_features(
                    self.token_features,
                    (
                        *self.features,
                        *(f.get("name") for f in self.item_features),
                    ),
                ),
                "must be dicts with distinct names, none of them another "
                "feature's, and a vocabulary_size >= 2",
            ),
            "cpr_reranker_ks": (
                len(set(self.cpr_reranker_ks)) == len(self.cpr_reranker_ks),
                "must be distinct sizes",
            ),
        }
        for name, (holds, rule) in checks.items():
            if not holds:
                raise ValueError(
                    f"Invalid model config: {name} {rule}. Received: "
                    f"{name}={getattr(self, name)!r}"
                )
        tied = self.head in HEADS and head_spec(self.head).tied_softmax
        if self.cosine_temperature is not None and not tied:
            raise ValueError(
                "Invalid model config: cosine_temperature applies to the "
                f"softmax heads {tied_softmax_heads()}, whose logits are "
                "h E^T + b. Received: cosine_temperature="
                f"{self.cosine_temperature!r} with head={self.head!r}"
            )
        choices = {
            "encoder": ENCODERS,
            "head": HEADS,
            "objective": OBJECTIVES,
            "cpr_merge": CPR_MERGES,
            "sasrec_norm": SASREC_NORMS,
            "feature_fusion": FUSION_MODES,
        }
        for name, allowed in choices.items():
            if getattr(self, name) not in allowed:
                raise ValueError(
                    f"{name} must be one of {allowed}. Received: "
                    f"{name}={getattr(self, name)!r}"
                )
        self._check_objective_settings()
        # The head's own settings (e.g. CPR's reranker sizes).
        head_spec(self.head).check(self)

    def _check_objective_settings(self) -> None:
        """Refuses an objective's own setting (``ObjectiveSpec.settings``)
        given with another objective, then asks the objective's spec."""
        spec = objective_spec(self.objective)
        for name in sorted(
            {n for o in OBJECTIVES for n in objective_spec(o).settings}
        ):
            if name not in spec.settings and getattr(
                self, name
            ) != field_default(ModelConfig, name):
                raise ValueError(
                    f"Invalid model config: {name} applies to the objectives "
                    f"{objectives_reading(name)}. Received: {name}="
                    f"{getattr(self, name)!r} with objective={self.objective!r}"
                )
        spec.check(self)

    def head_dropout_rate(self) -> float:
        """``head_dropout``, or the head's default when it is None."""
        if self.head_dropout is not None:
            return float(self.head_dropout)
        return default_head_dropout(self.head)

    def trained_dict(self) -> dict:
        """``to_dict()`` with the effective head dropout (``as_trained``)."""
        return as_trained(self.to_dict())

    @property
    def position_inputs(self) -> tuple[str, ...]:
        """The batch keys of per-position features the model reads: the
        float ``features``, then the ``token_features``' names."""
        return (*self.features, *(f["name"] for f in self.token_features))

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, values: dict) -> "ModelConfig":
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ValueError(
                f"Unknown model config keys {unknown}; known: {sorted(known)}"
            )
        return cls(**values)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)

    @classmethod
    def from_json(cls, text: str) -> "ModelConfig":
        return cls.from_dict(json.loads(text))
