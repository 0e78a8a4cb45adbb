"""Named recipes: the settings of a measured result, by name.

``tfrec-tricks train --data ml-1m --recipe long-histories`` trains the
model of ``benchmarks/results/ml-1m-long-histories``. A recipe is a set of
defaults, as a ``--config`` file's are: flags on the command line override
it, and the run records the values, not the recipe's name, so a run with
the recipe and one with the same flags spelled out are the same run.

The values stay out of the defaults because they were chosen on ml-1m
alone: every session-data result here is measured at the defaults, and a
200-epoch SASRec default would change each of them unmeasured
(docs/decisions.md#recipes).
"""

import copy

_LONG_HISTORIES = {
    "summary": "SASRec 2 x 64 with 1 head and dropout 0.1, 200-item "
    "windows 100 apart, lr 2e-3, up to 200 epochs with patience 10, "
    "seen items excluded from the ranking: the MovieLens-1M recipe "
    "(users with hundreds of items)",
    "train": {
        "max_len": 200,
        "train_windows": True,
        "window_stride": 100,
        "learning_rate": 0.002,
        "epochs": 200,
        "patience": 10,
        "eval_seen_excluded": True,
    },
    "model": {
        "encoder": "sasrec",
        "num_layers": 2,
        "num_heads": 1,
        "embedding_dim": 64,
        "dropout": 0.1,
        "attention_dropout": 0.1,
    },
}
# The same model trained on a one-hour budget: a higher rate, warmed up and
# decayed, reaches the constant rate's converged score in 25 epochs
# (benchmarks/results/ml-1m-long-histories, docs/decisions.md#recipes).
_ONE_HOUR = {
    "summary": "long-histories in 25 epochs (about an hour on 2 "
    "cores): lr 5e-3 after 1 warmup epoch, decayed along a cosine",
    "train": {
        **_LONG_HISTORIES["train"],
        "learning_rate": 0.005,
        "lr_schedule": "cosine",
        "warmup_epochs": 1,
        "epochs": 25,
    },
    "model": _LONG_HISTORIES["model"],
}
RECIPES = {
    "long-histories": _LONG_HISTORIES,
    "long-histories-1h": _ONE_HOUR,
    # Four HSTU blocks in place of SASRec's two, on the one-hour schedule
    # stretched to 50 epochs (patience 10 may end it earlier): the best
    # ml-1m row of three seeds on validation (the same page).
    "long-histories-hstu": {
        "summary": "long-histories-1h with 4 HSTU blocks in place of "
        "SASRec's 2 and its cosine stretched to 50 epochs (patience 10): "
        "the best MovieLens-1M model here, 40-45 minutes a seed on a "
        "fast 2-core machine",
        "train": {**_ONE_HOUR["train"], "epochs": 50},
        "model": {
            **_LONG_HISTORIES["model"],
            "encoder": "hstu",
            "num_layers": 4,
        },
    },
}


def recipe_options(name: str) -> dict:
    """A recipe's options, as ``load_config_file`` returns a file's.

    Args:
        name: str. One of ``RECIPES``.

    Returns:
        ``{"train": {...}, "model": {...}}``, a copy the caller may change.

    Raises:
        ValueError: for a name that is not a recipe, naming the recipes.

    Example:

    >>> recipe_options("long-histories")["model"]["encoder"]
    'sasrec'
    """
    if name not in RECIPES:
        raise ValueError(
            f"Unknown recipe. Expected one of {sorted(RECIPES)}. "
            f"Received: {name!r}"
        )
    recipe = RECIPES[name]
    return {part: copy.deepcopy(recipe[part]) for part in ("train", "model")}
