"""The plain, serialisable configuration of a sequential retrieval model."""

import dataclasses
import json

from tfrec_tricks.typed_fields import check_field_types

ENCODERS = ("gru4rec", "sasrec")
HEADS = ("softmax", "cpr", "mos", "softmax_no_dup")
OBJECTIVES = ("full", "sampled")
CPR_MERGES = ("replace", "add")
# The per-position features standardised after a log1p (heavy-tailed);
# every feature is standardised with statistics of the training data.
LOG1P_FEATURES = ("time_gap",)


@dataclasses.dataclass
class ModelConfig:
    """What to build; JSON round-trips through ``to_dict`` / ``from_dict``.

    Every technique is a switch here; arrays the model needs (the item
    graph of SSE-Graph, the item frequencies of the logQ correction, the
    statistics of standardised features) are constructor arguments of
    ``SequentialRetrievalModel`` instead, and travel in its weights.

    Attributes:
        num_items: int. N, the item vocabulary size including padding id 0.
        max_len: int. History length the model reads (SASRec's positional
            table has ``max_len`` rows).
        embedding_dim: int. d, the item embedding size.
        embedding_init_stddev: float. The item table starts N(0, s^2).
            Keras' default, uniform in +-0.05, leaves a full-softmax model
            on a loss plateau for its first epochs (on YOOCHOOSE validation
            NDCG@10 after 10 epochs: 0.26 with it, 0.37 with s = 0.1).
        encoder: str. Sequence encoder: ``"gru4rec"`` or ``"sasrec"``.
        hidden_dim: int or None. Encoder state size (projected back to d
            when it differs, as the output logits are scored against the
            d-sized item table). Defaults to d.
        num_layers: int. Stacked encoder layers (GRUs or transformer
            blocks).
        num_heads: int. SASRec attention heads; must divide the encoder
            width.
        dropout: float. Dropout on item embeddings and encoder outputs
            (SASRec: also inside the blocks, "hidden dropout").
        attention_dropout: float. SASRec dropout on attention weights.
        ffn_dim: int or None. SASRec feed-forward inner size; None means
            the hidden size (the SASRec paper's; RecBole's default is 256).
        head_dropout: float. Dropout on the query projections of the
            ``"cpr"`` and ``"mos"`` heads (``SoftmaxCPR`` /
            ``MixtureOfSoftmax`` ``dropout``); the plain softmax head has
            no projection to drop.
        tie_embeddings: bool. One item table for inputs and outputs
            (``TiedItemEmbedding(tie=True)``); False adds a separate
            ``[N, d]`` output table.
        output_bias: bool. Per-item output bias ``b`` in ``h E^T + b``.
        sse_item_probability: float. SSE-SE replacement probability of the
            history ids (training only); 0 disables it.
        sse_label_probability: float. SSE-SE replacement probability of
            the target ids (training only; acts like label smoothing with
            epsilon about p); 0 disables it.
        sse_graph_rho: float. SSE-Graph neighbour ratio rho (>= 1), used
            when the model is given an item graph.
        sse_seed: int or None. Seed of the SSE replacements.
        features: tuple of str. Per-position float features of the batch
            (e.g. ``("time_gap",)``), each soft one-hot encoded and added to
            the item embeddings.
        soft_one_hot_buckets: int. Buckets P of each feature's encoding.
        head: str. Output head: ``"softmax"`` (tied logits), ``"cpr"``
            (Softmax-CPR), ``"mos"`` (Mixture of Softmax) or
            ``"softmax_no_dup"`` (softmax, history items removed at
            inference).
        cpr_context: bool. CPR context partition C.
        cpr_pointer: bool. CPR pointer term P.
        cpr_reranker_ks: tuple of int. CPR reranker sizes k (each < N).
        cpr_mi: bool. CPR multiple input hidden states (reads the last
            ``min(2, num_layers)`` encoder layers).
        cpr_merge: str. ``"replace"`` (the reference) or ``"add"``.
        cpr_start_as_softmax: bool. Initialise the CPR head so that its
            first logits equal the tied softmax's (``SoftmaxCPR``
            ``start_as_softmax``); False gives the reference's random
            projections. On yoochoose-100k it lifts SASRec + CPR from test
            NDCG@10 0.395 to 0.410 (README, Results).
        mos_components: int. Mixture components K of the ``"mos"`` head.
        objective: str. ``"full"``: softmax cross-entropy over the whole
            catalogue; ``"sampled"``: in-batch sampled softmax with
            ``tfrs.tasks.Retrieval`` semantics.
        num_hard_negatives: int or None. Sampled objective: keep only the
            hardest negatives per query; None keeps all.
        remove_accidental_hits: bool. Sampled objective: in-batch
            negatives equal to the query's target are left out.
        logq_correction: bool. Sampled objective: subtract
            ``log p(candidate)`` (popularity of training targets).
        learning_rate: float. Adam's learning rate.
        metric_ks: tuple of cut-offs reported by the model's metrics.
    """

    num_items: int
    max_len: int = 50
    embedding_dim: int = 64
    embedding_init_stddev: float = 0.1
    encoder: str = "gru4rec"
    hidden_dim: int | None = None
    num_layers: int = 1
    num_heads: int = 2
    dropout: float = 0.2
    attention_dropout: float = 0.2
    ffn_dim: int | None = None
    head_dropout: float = 0.0
    tie_embeddings: bool = True
    output_bias: bool = True
    sse_item_probability: float = 0.0
    sse_label_probability: float = 0.0
    sse_graph_rho: float = 10.0
    sse_seed: int | None = None
    features: tuple[str, ...] = ()
    soft_one_hot_buckets: int = 10
    head: str = "softmax"
    cpr_context: bool = True
    cpr_pointer: bool = True
    cpr_reranker_ks: tuple[int, ...] = (100,)
    cpr_mi: bool = False
    cpr_merge: str = "replace"
    cpr_start_as_softmax: bool = True
    mos_components: int = 4
    objective: str = "full"
    num_hard_negatives: int | None = None
    remove_accidental_hits: bool = True
    logq_correction: bool = True
    learning_rate: float = 1e-3
    metric_ks: tuple[int, ...] = (10,)

    def __post_init__(self):
        if isinstance(self.features, str):
            self.features = (self.features,)
        if isinstance(self.cpr_reranker_ks, int):
            self.cpr_reranker_ks = (self.cpr_reranker_ks,)
        check_field_types(self)
        self.features = tuple(str(f) for f in self.features)
        self.metric_ks = tuple(int(k) for k in self.metric_ks)
        self.cpr_reranker_ks = tuple(int(k) for k in self.cpr_reranker_ks)
        width = self.hidden_dim or self.embedding_dim
        # name: (holds, the rule a reader needs to fix it)
        checks = {
            "num_items": (self.num_items >= 2, "must be at least 2"),
            "max_len": (self.max_len > 0, "must be positive"),
            "embedding_dim": (self.embedding_dim > 0, "must be positive"),
            "embedding_init_stddev": (
                self.embedding_init_stddev > 0,
                "must be positive",
            ),
            "num_layers": (self.num_layers > 0, "must be positive"),
            "num_heads": (
                self.num_heads > 0
                and (self.encoder != "sasrec" or width % self.num_heads == 0),
                f"must be positive and divide the encoder width {width}",
            ),
            "learning_rate": (self.learning_rate > 0, "must be positive"),
            "dropout": (0.0 <= self.dropout < 1.0, "must be in [0, 1)"),
            "attention_dropout": (
                0.0 <= self.attention_dropout < 1.0,
                "must be in [0, 1)",
            ),
            "ffn_dim": (
                self.ffn_dim is None or self.ffn_dim > 0,
                "must be positive or null",
            ),
            "head_dropout": (
                0.0 <= self.head_dropout < 1.0,
                "must be in [0, 1)",
            ),
            "hidden_dim": (
                self.hidden_dim is None or self.hidden_dim > 0,
                "must be positive or null",
            ),
            "metric_ks": (
                bool(self.metric_ks) and all(k > 0 for k in self.metric_ks),
                "must be positive cut-offs",
            ),
            "sse_item_probability": (
                0.0 <= self.sse_item_probability < 1.0,
                "must be in [0, 1)",
            ),
            "sse_label_probability": (
                0.0 <= self.sse_label_probability < 1.0,
                "must be in [0, 1)",
            ),
            "sse_graph_rho": (self.sse_graph_rho >= 1.0, "must be >= 1"),
            "soft_one_hot_buckets": (
                self.soft_one_hot_buckets > 0,
                "must be positive",
            ),
            "features": (
                len(set(self.features)) == len(self.features)
                and all(self.features),
                "must be distinct, non-empty names",
            ),
            "cpr_reranker_ks": (
                len(set(self.cpr_reranker_ks)) == len(self.cpr_reranker_ks)
                and all(k > 0 for k in self.cpr_reranker_ks),
                "must be distinct positive sizes",
            ),
            "mos_components": (self.mos_components > 0, "must be positive"),
            "num_hard_negatives": (
                self.num_hard_negatives is None or self.num_hard_negatives > 0,
                "must be positive or null",
            ),
        }
        for name, (holds, rule) in checks.items():
            if not holds:
                raise ValueError(
                    f"Invalid model config: `{name}` {rule}. Received: "
                    f"{name}={getattr(self, name)!r}"
                )
        # Checked only when the CPR head is used: the default (100,) is
        # too large for tiny catalogues but harmless to other heads.
        largest = self.num_items - 1
        if self.head == "cpr" and any(
            k > largest for k in self.cpr_reranker_ks
        ):
            raise ValueError(
                "Invalid model config: each CPR reranker size k must be at "
                f"most the number of real items, {largest} here "
                f"(num_items={self.num_items} counts the padding id 0); "
                "choose smaller sizes (CLI: --cpr-rerankers K,K or 'none'). "
                f"Received: cpr_reranker_ks={self.cpr_reranker_ks!r}"
            )
        choices = {
            "encoder": ENCODERS,
            "head": HEADS,
            "objective": OBJECTIVES,
            "cpr_merge": CPR_MERGES,
        }
        for name, allowed in choices.items():
            if getattr(self, name) not in allowed:
                raise ValueError(
                    f"{name} must be one of {allowed}. Received: "
                    f"{name}={getattr(self, name)!r}"
                )

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
