"""Selection that survives noise: retrain the best trials and the defaults.

A search scores each trial once, often on a shortened budget (Hyperband's
early rounds), so its best score is partly luck. This module retrains the
few best distinct configurations and the defaults (what ``tfrec-tricks
train`` trains with the same options) with the final protocol (the
search's ``--epochs`` and ``--patience``, for each seed): ``candidates``,
``retrain``; ``pick`` chooses the one with the best mean validation
NDCG@10. A configuration replaces the
defaults only when it beats them there: the search can report "keep your
defaults" (on yoochoose-100k it did: docs/decisions.md#defaults-first).

The runs are ordinary run directories under ``<search>/selection/``: an
interrupted selection resumes, and finished runs are reused.
"""

import dataclasses
import os
from typing import Any

from tfrec_tricks.heads.registry import head_spec
from tfrec_tricks.training.evaluate import training_minutes
from tfrec_tricks.training.model_options import DERIVED_MODEL_FIELDS
from tfrec_tricks.training.run_directory import differences
from tfrec_tricks.training.run_training import train
from tfrec_tricks.training.train_config import TrainConfig

DEFAULTS = "defaults"
SELECTION_DIR = "selection"


@dataclasses.dataclass
class Candidate:
    """A configuration to retrain.

    Attributes:
        label: str. "defaults" or "trial <id>".
        config: TrainConfig. Its training configuration (seed and name are
            set per retraining run).
        search_score: float or None. Its score in the search.
    """

    label: str
    config: TrainConfig
    search_score: float | None = None


def trial_config(hp: Any, hypermodel: Any, config: TrainConfig) -> TrainConfig:
    """The ``TrainConfig`` that trains a trial's hyperparameters.

    Args:
        hp: ``keras_tuner.HyperParameters`` of the trial.
        hypermodel: its ``SequentialRetrievalHyperModel``.
        config: the search's ``TrainConfig`` (data options, epochs, seed).

    Returns:
        ``config`` with the trial's batch size, learning rate and model;
        its ``--features`` name the trial's per-interaction features,
        float and token (``ModelConfig.position_inputs``: ``train`` then
        keeps those token features), or are the search's own when they
        select the same; with item attributes, the ``--features`` (and
        ``--item-features``) that read the trial's features
        (``ItemFeatureSpace.train_options``).
    """
    model_config = hypermodel.model_config(hp)
    overrides = {
        k: v
        for k, v in model_config.to_dict().items()
        if k not in DERIVED_MODEL_FIELDS
    }
    position = model_config.position_inputs
    token_names = list(getattr(hypermodel.data, "token_feature_names", []))
    item_features = config.item_features
    space = getattr(hypermodel, "item_feature_space", None)
    if space is not None:
        overrides["features"], item_features = space.train_options(
            config,
            hypermodel.data.feature_names,
            position,
            [f["name"] for f in model_config.item_features],
            token_names,
        )
    else:
        overrides["features"] = _features_option(
            config, hypermodel, model_config
        )
    return dataclasses.replace(
        config,
        batch_size=hypermodel.batch_size(hp),
        learning_rate=model_config.learning_rate,
        model=overrides,
        item_features=item_features,
    )


def _features_option(
    config: TrainConfig, hypermodel: Any, model_config: Any
) -> tuple[str, ...]:
    """The ``--features`` with which ``train`` reads ``model_config``'s
    per-interaction features: the search's own when they select them
    (the configuration is then written as the defaults are: the
    selection compares configurations by their options), else the names
    (``ModelConfig.position_inputs``)."""
    given = tuple(config.model.value("features"))
    tokens = tuple(f["name"] for f in model_config.token_features)
    try:
        same = hypermodel.split_features(given) == (
            model_config.features,
            tokens,
        )
    except ValueError:
        same = False
    return given if same else model_config.position_inputs


def settings(config: TrainConfig, num_items: int) -> dict:
    """What a configuration trains: the resolved model, the batch size and
    the item attributes file (``item_features``, when there is one).

    The head dropout is its effective rate: ``train``'s None (the head's
    default) and the same rate given explicitly train the same model.
    """
    model = config.model_config(num_items).trained_dict()
    for name in ("num_items", "max_len", "item_features"):
        model.pop(name)
    values = {**model, "batch_size": config.batch_size}
    if config.item_features is not None:
        # With the file and no --features, train fuses every attribute.
        values["item_features"] = config.item_features
    return values


def candidates(
    tuner: Any, hypermodel: Any, config: TrainConfig, top: int
) -> list[Candidate]:
    """The defaults and the ``top`` best distinct completed trials.

    A trial that trains the defaults (the search's first) is not listed
    again; its search score goes to the defaults' row.

    Args:
        tuner: a tuner after its search.
        hypermodel: its ``SequentialRetrievalHyperModel``.
        config: the search's ``TrainConfig``: the defaults.
        top: int. How many trials.

    Returns:
        list of ``Candidate``, the defaults first.
    """
    num_items = hypermodel.data.num_items
    defaults = Candidate(DEFAULTS, config)
    seen = [settings(config, num_items)]
    chosen = [defaults]
    completed = [
        t for t in tuner.oracle.trials.values() if t.status == "COMPLETED"
    ]
    completed.sort(key=lambda t: t.score, reverse=True)
    for trial in completed:
        trial_train = trial_config(trial.hyperparameters, hypermodel, config)
        trained = settings(trial_train, num_items)
        if trained == seen[0] and defaults.search_score is None:
            defaults.search_score = trial.score
        if trained in seen:
            continue
        if len(chosen) <= top:
            seen.append(trained)
            chosen.append(
                Candidate(f"trial {trial.trial_id}", trial_train, trial.score)
            )
    return chosen


# Settings that only matter together with their switch: changed as one.
_SWITCH_GROUPS = {
    "head": ("head", "cpr_", "mos_", "head_dropout"),
    "sse": ("sse_",),
    "features": (
        "features",
        "soft_one_hot_buckets",
        "item_features",
        "feature_fusion",
    ),
    "encoder": ("encoder", "num_heads", "attention_dropout", "ffn_dim"),
}


def _group(name: str) -> str:
    for switch, prefixes in _SWITCH_GROUPS.items():
        if any(name.startswith(prefix) for prefix in prefixes):
            return switch
    return name


def one_change_candidates(
    defaults: TrainConfig, chosen: TrainConfig, num_items: int
) -> list[Candidate]:
    """The defaults with one of ``chosen``'s changes each: where a gain
    comes from.

    Settings that apply only with their switch change together (the head
    with its CPR / MoS settings and head dropout; the SSE probabilities;
    the features with their buckets, the item attributes file and the
    fusion; the encoder with its own settings).

    Args:
        defaults: the defaults' ``TrainConfig``.
        chosen: the chosen configuration's.
        num_items: int. The catalogue size.

    Returns:
        list of ``Candidate`` labelled "defaults + <change>", one per group
        of changed settings (none when ``chosen`` is the defaults).
    """
    before = settings(defaults, num_items)
    after = settings(chosen, num_items)
    groups: dict[str, list[str]] = {}
    # Both sides' names: the item attributes file may be on one side only.
    for name in {**before, **after}:
        if after.get(name) != before.get(name):
            groups.setdefault(_group(name), []).append(name)
    result = []
    for group, names in groups.items():
        changes = {name: after.get(name) for name in names}
        train_changes = {
            name: changes.pop(name)
            for name in ("batch_size", "learning_rate", "item_features")
            if name in changes
        }
        config = dataclasses.replace(
            defaults,
            model=defaults.model.with_values(**changes),
            **train_changes,
        )
        result.append(Candidate(f"defaults + {group}", config))
    return result


def technique_summary(
    config: TrainConfig, num_items: int, trained: Any = None
) -> str:
    """The techniques a configuration uses, e.g. "CPR:100+Mi; tied; SSE".

    Args:
        config: the configuration's ``TrainConfig``.
        num_items: int. The catalogue size.
        trained: ``ModelConfig`` or None. The model its run trained (its
            features resolved against the data: the item attributes
            apart). Defaults to None: ``config``'s, with ``features`` as
            given.

    Returns:
        str.
    """
    model = trained if trained is not None else config.model_config(num_items)
    head = head_spec(model.head).describe(model)
    used = [head, "tied" if model.tie_embeddings else "untied"]
    if model.sse_item_probability or model.sse_label_probability:
        used.append(
            f"SSE item {model.sse_item_probability:g} / label "
            f"{model.sse_label_probability:g}"
        )
    if model.features:
        used.append(
            f"soft one-hot {','.join(model.features)} "
            f"({model.soft_one_hot_buckets} buckets)"
        )
    if model.token_features:
        names = ",".join(f["name"] for f in model.token_features)
        used.append(f"token features {names}")
    if model.item_features:
        names = ",".join(f["name"] for f in model.item_features)
        used.append(f"item features {names} ({model.feature_fusion})")
    return "; ".join(used)


def retrain(
    chosen: list[Candidate],
    seeds: list[int],
    output_dir: str,
    num_items: int,
    verbose: int = 0,
    reference: TrainConfig | None = None,
) -> list[dict]:
    """Trains each candidate once per seed; one row per candidate.

    Args:
        chosen: list of ``Candidate`` (the defaults first).
        seeds: list of int.
        output_dir: str. Where the runs go (``<label>-seed<seed>``).
        num_items: int. The catalogue size (resolves the configurations).
        verbose: int. Keras verbosity of the runs, and a line per run.
        reference: TrainConfig or None. What "differs" compares with.
            Defaults to None: the first candidate's configuration.

    Returns:
        list of dict: label, search score, per-seed and mean validation and
        test NDCG@10, training minutes, the techniques, and what differs
        from the defaults.
    """
    rows = []
    baseline = settings((reference or chosen[0].config), num_items)
    for candidate in chosen:
        validation, test, minutes = [], [], 0.0
        model = None
        for seed in seeds:
            name = f"{candidate.label.replace(' ', '-')}-seed{seed}"
            run_config = dataclasses.replace(
                candidate.config, seed=seed, output_dir=output_dir, name=name
            )
            if verbose:
                print(f"Retraining {candidate.label}, seed {seed}", flush=True)
            result = train(run_config, verbose=verbose)
            model = result.model.config
            validation.append(result.metrics["validation"]["ndcg@10"])
            test.append(result.metrics["test"]["ndcg@10"])
            minutes += training_minutes(result.metrics)
        trained = settings(candidate.config, num_items)
        rows.append(
            {
                "label": candidate.label,
                "search_score": candidate.search_score,
                "validation": validation,
                "test": test,
                "validation_mean": sum(validation) / len(validation),
                "test_mean": sum(test) / len(test),
                "training_minutes": minutes,
                "techniques": technique_summary(
                    candidate.config, num_items, model
                ),
                "differs": differences(baseline, trained),
                "config": candidate.config,
            }
        )
    return rows


def pick(rows: list[dict]) -> dict:
    """The row with the best mean validation NDCG@10; the defaults (the
    first row) unless another beats them."""
    best = rows[0]
    for row in rows[1:]:
        if row["validation_mean"] > best["validation_mean"]:
            best = row
    return best


def _spread(values: list[float]) -> str:
    """Mean, with the range over seeds when there are several."""
    mean = f"{sum(values) / len(values):.4f}"
    if len(values) == 1:
        return mean
    return f"{mean} ({max(values) - min(values):.4f})"


def table_lines(rows: list[dict], chosen: dict) -> list[str]:
    """The candidates as a markdown table, the defaults (first row) first.

    Columns: search score, validation and test NDCG@10 (mean, and range
    over seeds), their change against the defaults, training minutes, the
    techniques and what differs from the defaults.
    """
    defaults = rows[0]
    lines = [
        "| candidate | search score | validation NDCG@10 | test NDCG@10 | "
        "change val / test | training min | techniques | differs from the "
        "defaults |",
        "|---|---:|---:|---:|---:|---:|---|---|",
    ]
    for row in rows:
        label = row["label"]
        if row is chosen:
            label = f"**{label}** (chosen)"
        score = row["search_score"]
        change_val = row["validation_mean"] / defaults["validation_mean"] - 1
        change_test = row["test_mean"] / defaults["test_mean"] - 1
        lines.append(
            f"| {label} | {'–' if score is None else f'{score:.4f}'} | "
            f"{_spread(row['validation'])} | {_spread(row['test'])} | "
            f"{change_val:+.1%} / {change_test:+.1%} | "
            f"{row['training_minutes']:.1f} | {row['techniques']} | "
            f"{'; '.join(row['differs']) or '–'} |"
        )
    return lines


def write_report(rows: list[dict], chosen: dict, path: str) -> str:
    """Writes the selection as markdown; returns the text."""
    seeds = len(rows[0]["validation"])
    lines = [
        "# Selection: the best trials and the defaults, retrained",
        "",
        f"Each retrained with the final protocol, {seeds} seed(s); chosen on "
        "the mean validation NDCG@10; range over the seeds in brackets.",
        "",
        *table_lines(rows, chosen),
    ]
    if chosen is rows[0]:
        lines += [
            "",
            "No trial beat the defaults on validation: keep them.",
        ]
    text = "\n".join(lines) + "\n"
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "w") as handle:
        handle.write(text)
    return text
