"""The built-in heads' specs: softmax, cpr, mos and softmax_no_dup.

Registered in this order, the order of ``--head``'s choices and of a
search's head choice (a recorded search's fingerprint holds it). Each
imports its layer in ``build`` only: this module imports no TensorFlow.
"""

from typing import Any

from tfrec_tricks.heads.registry import HeadParts, HeadSpec, register_head

#: ``head_dropout`` of the cpr head when none is given: +2.2% validation
#: NDCG@10 over 0 on retailrocket-20k, level on yoochoose-100k
#: (docs/decisions.md#cpr-head-dropout).
CPR_HEAD_DROPOUT = 0.3
#: The reranker sizes a search tries (``cpr_reranker_ks``, comma-joined;
#: the search's word for none first).
RERANKER_SIZES = ("20", "100", "500", "20,100,500")


def reranker_choices(num_items: int, none: str) -> list:
    """``none`` and the ``RERANKER_SIZES`` whose sizes are all below
    ``num_items``: a search's ``cpr_reranker_ks`` values.

    >>> reranker_choices(101, "none")
    ['none', '20', '100']
    """
    return [none] + [
        choice
        for choice in RERANKER_SIZES
        if all(int(k) < num_items for k in choice.split(","))
    ]


class _TiedSoftmaxSpec(HeadSpec):
    """``h E^T + b`` with the tied item table."""

    tied_softmax = True
    settings = ("cosine_temperature",)
    later_options = {"cosine_temperature": None}
    # Ranks the history last at inference (``TiedSoftmax.exclude_history``).
    excludes_history = False

    def build(self, config: Any, hidden: int) -> HeadParts:
        from tfrec_tricks.heads.tied_softmax import TiedSoftmax

        d = config.embedding_dim
        head = TiedSoftmax(
            exclude_history=self.excludes_history,
            output_dim=d if hidden != d else None,
            cosine_temperature=config.cosine_temperature,
            name="softmax_head",
        )
        return HeadParts(head, head.projection)

    def extension_refusal(self, config: Any) -> str | None:
        # A new item's logit is its own row's and bias's alone.
        return None


@register_head
class SoftmaxSpec(_TiedSoftmaxSpec):
    name = "softmax"
    summary = "tied logits h E^T + b"


@register_head
class CPRSpec(HeadSpec):
    name = "cpr"
    summary = "Softmax-CPR: context, pointer and reranker partitions"
    default_dropout = CPR_HEAD_DROPOUT
    takes_dropout = True
    search_rows_first = True
    settings = (
        "cpr_context",
        "cpr_pointer",
        "cpr_reranker_ks",
        "cpr_mi",
        "cpr_merge",
        "cpr_start_as_softmax",
        "cpr_base_loss",
        "cpr_rerank_within_candidates",
    )
    later_options = {
        "cpr_base_loss": 0.0,
        "cpr_rerank_within_candidates": False,
    }

    def build(self, config: Any, hidden: int) -> HeadParts:
        from tfrec_tricks.heads.cpr.softmax_cpr import SoftmaxCPR

        head = SoftmaxCPR(
            use_context=config.cpr_context,
            use_pointer=config.cpr_pointer,
            reranker_ks=config.cpr_reranker_ks,
            use_mi=config.cpr_mi,
            mi_layers=min(2, config.num_layers),
            merge=config.cpr_merge,
            start_as_softmax=config.cpr_start_as_softmax,
            rerank_within_candidates=config.cpr_rerank_within_candidates,
            dropout=config.head_dropout_rate(),
            output_dim=config.embedding_dim,
            name="cpr_head",
        )
        return HeadParts(head, None, float(config.cpr_base_loss))

    def check(self, config: Any) -> None:
        # Checked only for this head: the default (100,) is too large for
        # tiny catalogues but harmless to other heads.
        largest = config.num_items - 1
        if any(k > largest for k in config.cpr_reranker_ks):
            raise ValueError(
                "Invalid model config: each CPR reranker size k must be at "
                f"most the number of real items, {largest} here "
                f"(num_items={config.num_items} counts the padding id 0); "
                "choose smaller sizes (CLI: --cpr-rerankers K,K or 'none'). "
                f"Received: cpr_reranker_ks={config.cpr_reranker_ks!r}"
            )

    def parameters(self, config: Any, width: int) -> int:
        return super().parameters(config, width) + width * config.embedding_dim

    def extension_refusal(self, config: Any) -> str | None:
        if not config.cpr_reranker_ks:
            return None
        return (
            "--add-items cannot extend Softmax-CPR with rerankers: a "
            "reranker rescores the top-k of the whole catalogue, so a new "
            "item entering it would change an old item's score. Received: "
            f"cpr_reranker_ks={config.cpr_reranker_ks!r} (CPR without "
            "rerankers, --cpr-rerankers none, can be extended)"
        )

    def search_rows(self, space: Any) -> list:
        rerankers = reranker_choices(space.num_items, space.none)
        cpr = ("head", [self.name])
        return [
            (name, "Boolean", {"default": space.default(name)}, cpr)
            for name in ("cpr_context", "cpr_pointer")
        ] + [
            (
                "cpr_reranker_ks",
                "Choice",
                {
                    "values": rerankers,
                    "default": "100" if "100" in rerankers else space.none,
                },
                cpr,
            ),
            ("cpr_mi", "Boolean", {"default": space.default("cpr_mi")}, cpr),
            (
                "cpr_base_loss",
                "Choice",
                {
                    "values": sorted(
                        {0.0, 0.1, 0.3, 1.0, space.default("cpr_base_loss")}
                    ),
                    "default": space.default("cpr_base_loss"),
                },
                cpr,
            ),
        ]

    def describe(self, config: Any) -> str:
        parts = [
            name
            for name, used in (
                ("context", config.cpr_context),
                ("pointer", config.cpr_pointer),
            )
            if used
        ]
        if config.cpr_reranker_ks:
            parts.append(",".join(map(str, config.cpr_reranker_ks)))
        if config.cpr_mi:
            parts.append("Mi")
        parts.append(f"base loss {config.cpr_base_loss:g}")
        return f"CPR ({', '.join(parts)})"


@register_head
class MixtureOfSoftmaxSpec(HeadSpec):
    name = "mos"
    summary = "a mixture of softmaxes"
    takes_dropout = True
    settings = ("mos_components",)

    def build(self, config: Any, hidden: int) -> HeadParts:
        from tfrec_tricks.heads.mixture_of_softmax import MixtureOfSoftmax

        head = MixtureOfSoftmax(
            config.mos_components,
            dropout=config.head_dropout_rate(),
            output_dim=config.embedding_dim,
            name="mos_head",
        )
        return HeadParts(head)

    def parameters(self, config: Any, width: int) -> int:
        d = config.embedding_dim
        return super().parameters(config, width) + config.mos_components * (
            width * d + width
        )

    def logit_copies(self, config: Any) -> int:
        return config.mos_components

    def extension_refusal(self, config: Any) -> str | None:
        return (
            "--add-items cannot extend a mixture of softmaxes: its scores "
            "are normalised over the whole catalogue, so a new item would "
            f"change every old item's score. Received: head={config.head!r}"
        )

    def search_rows(self, space: Any) -> list:
        return [
            (
                "mos_components",
                "Choice",
                {
                    "values": [2, 4, 8],
                    "default": space.default("mos_components"),
                },
                ("head", [self.name]),
            )
        ]

    def describe(self, config: Any) -> str:
        return f"MoS {config.mos_components}"


@register_head
class SoftmaxNoDupSpec(_TiedSoftmaxSpec):
    name = "softmax_no_dup"
    summary = "the tied softmax, history items ranked last at inference"
    excludes_history = True
