"""The ablation's rows (each variant's model settings) and the check of
its report folder.

Apart from ``training.ablation`` (which trains them, and imports TensorFlow)
because ``tfrec-tricks ablation --rows`` lists them in its help and refuses
other names, and a report folder it may not write, before TensorFlow loads.
"""

from tfrec_tricks.output_folders import TargetKind, check_target

ABLATION_REPORT = TargetKind("ablation report", "--report-dir")

# The paper's CPR: no loss on the base logits (``--cpr-base-loss 0``).
_PAPER_CPR = {"head": "cpr", "cpr_base_loss": 0.0}
_NO_PARTITIONS = {
    **_PAPER_CPR,
    "cpr_context": False,
    "cpr_pointer": False,
    "cpr_reranker_ks": (),
}

#: Row name -> model-config overrides (on top of the base configuration).
ROWS: dict[str, dict] = {
    "Softmax": {"head": "softmax"},
    "Softmax + Mi": {**_NO_PARTITIONS, "cpr_mi": True},
    "Softmax + C": {**_NO_PARTITIONS, "cpr_context": True},
    "Softmax + CP": {
        **_NO_PARTITIONS,
        "cpr_context": True,
        "cpr_pointer": True,
    },
    "Softmax + CPR:100": {**_PAPER_CPR, "cpr_reranker_ks": (100,)},
    "Softmax + CPR:100 + Mi": {
        **_PAPER_CPR,
        "cpr_reranker_ks": (100,),
        "cpr_mi": True,
    },
    "Softmax + CPR:20,100,500 + Mi": {
        **_PAPER_CPR,
        "cpr_reranker_ks": (20, 100, 500),
        "cpr_mi": True,
    },
    "MoS": {"head": "mos"},
    "Softmax w/o duplication": {"head": "softmax_no_dup"},
    "Untied embeddings": {"tie_embeddings": False},
    "SSE-SE p=0.1": {"sse_item_probability": 0.1, "sse_label_probability": 0.1},
    "Soft one-hot time gap": {"features": ("time_gap",)},
    "Softmax + CPR:100 + Mi, add": {
        **_PAPER_CPR,
        "cpr_reranker_ks": (100,),
        "cpr_mi": True,
        "cpr_merge": "add",
    },
    "Softmax + CPR:100 + Mi, base loss 0.3": {
        "head": "cpr",
        "cpr_reranker_ks": (100,),
        "cpr_mi": True,
        "cpr_base_loss": 0.3,
    },
    "Softmax + CPR:100 + Mi, base loss 1": {
        "head": "cpr",
        "cpr_reranker_ks": (100,),
        "cpr_mi": True,
        "cpr_base_loss": 1.0,
    },
    "Softmax + CPR:100 + Mi, add, base loss 1": {
        "head": "cpr",
        "cpr_reranker_ks": (100,),
        "cpr_mi": True,
        "cpr_merge": "add",
        "cpr_base_loss": 1.0,
    },
}
PAPER_ROWS = tuple(list(ROWS)[:9])


def check_report_dir(output_dir: str, inputs: list[str]) -> None:
    """Refuses a report folder that ``write_report`` may not write, before
    any row trains (``output_folders.check_target``)."""
    check_target(output_dir, ABLATION_REPORT, inputs)
