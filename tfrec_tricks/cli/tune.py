"""``tfrec-tricks tune``: a KerasTuner search over techniques and settings."""

import argparse

from tfrec_tricks.cli.options import (
    non_negative_int,
    positive_float,
    positive_int,
    train_config,
)
from tfrec_tricks.config_fields import field_default
from tfrec_tricks.training.train_config import TrainConfig
from tfrec_tricks.tuning.search_budget import (
    DEFAULT_MAX_TRIALS,
    DEFAULT_RETRAIN_TOP,
    DEFAULT_TUNER,
    TUNERS,
)

HELP = "search the techniques and settings with KerasTuner"
USES_CONFIG = True
# The search loads its data in memory and distributes trials with
# KerasTuner's own chief / workers, not a prepared dataset or TF_CONFIG;
# trials select on full ranking only (no sampled-negative evaluation);
# trials train for differing epochs (Hyperband), so a schedule over
# --epochs would give each its own curve: they train at a constant rate.
SKIP_FIELDS = (
    "prepared",
    "distribute",
    "eval_negatives",
    "lr_schedule",
    "warmup_epochs",
)
DESCRIPTION = """\
Search with KerasTuner over the techniques (output head, CPR partitions,
reranker sizes, Mi and base loss, tied embeddings, SSE and its
probabilities, per-interaction features: float ones with their soft
one-hot buckets, and categorical token columns; when the data has item
features (--item-features, or the ml-1m / ml-1m-timed / ml-100k metadata),
which of them to fuse and how, sum or concat) and the usual settings
(encoder, embedding size, layers, attention heads, dropout, learning rate,
batch size), maximising validation NDCG@10.

How it goes:
  1. The first trial trains the defaults: what `tfrec-tricks train` with the
     same options trains. Model options and --batch-size / --learning-rate
     given on the command line (or by --config) stay fixed; the others are
     searched. --choices narrows one setting to a list.
  2. The tuner runs trials until --max-trials or --max-minutes. Each trial
     stops early after --patience epochs without a better validation
     NDCG@10. hyperband (the default) trains many configurations for a few
     epochs and continues the best third for three times as long, up to
     --epochs: most of the time goes to the configurations that keep
     improving, and the survivors train as long as the final model, so a
     fast starter does not win by learning fast. bayesian and random train
     every trial for up to --epochs.
  3. A search scores each trial once; its best is partly luck. The
     --retrain-top best distinct trials and the defaults are retrained
     with the final protocol (--seeds seeds each) and the one with the best
     mean validation NDCG@10 is chosen; a trial replaces the defaults only
     if it beats them there.

Writes OUTPUT_DIR/NAME/: best_config.json (the chosen configuration;
`tfrec-tricks train --config` accepts it), selection.md (every retrained
candidate's validation and test NDCG@10 beside the defaults', its
techniques and what it changes), trials.md (table), trials.png (each trial
and the best so far against wall time), tensorboard/ (hparams), search/
(KerasTuner's project), selection/ (the retrained runs) and search.json
(the search's fingerprint: options, fixed settings, --choices, budget,
data files' SHA-256s). The same command again resumes the search
(completed trials and retrained runs are kept, the time budget
continues); a search with another space, data or budget in the same
folder is refused before any trial, naming each difference; --overwrite
discards the old search and starts afresh.

Runs under tf-keras by default, under Keras 3 with TF_USE_LEGACY_KERAS=0
(docs/keras-versions.md); a search is resumed only under the Keras that
started it.

Refused before any trial: a space with nothing to search, hyperband with
--epochs below 3 or too few --max-trials to reach --epochs, bayesian with
no trial left after its random ones, --max-minutes shorter than one epoch
of the defaults, and any --choices value that no trial could train (not
a finite number such as inf, nan or 1e39, out of its range, unknown):
every value is checked, not only the first.

Distributed: run the same command on every machine with
KERASTUNER_ORACLE_IP, KERASTUNER_ORACLE_PORT and KERASTUNER_TUNER_ID set
(one process with KERASTUNER_TUNER_ID=chief serves the oracle, applies the
time budget, then retrains the candidates and writes the reports; the
workers, e.g. tuner0, tuner1, ... run the trials) and OUTPUT_DIR on a
shared file system.

examples:
  tfrec-tricks tune --max-minutes 60
  tfrec-tricks tune --data ml-100k --tuner bayesian --max-trials 30 --seeds 3
  tfrec-tricks tune --epochs 27 --head cpr \\
      --choices embedding_dim=32,64 --choices "cpr_reranker_ks=none;20;100"
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``tune`` beyond ``train``'s (data, model, output)."""
    parser.set_defaults(
        output_dir="tuning", batch_size=None, learning_rate=None
    )
    group = parser.add_argument_group("search")
    group.add_argument(
        "--tuner",
        choices=TUNERS,
        default=DEFAULT_TUNER,
        help="KerasTuner's Hyperband (largest budget --epochs, factor 3), "
        "BayesianOptimization or RandomSearch. Default: "
        f"{DEFAULT_TUNER}",
    )
    group.add_argument(
        "--max-trials",
        type=positive_int,
        default=None,
        metavar="N",
        help="trials to run at most. Default: hyperband, one whole "
        "iteration (30 trials at --epochs 10 or 20), or with --max-minutes "
        f"as many iterations as it allows; the others, {DEFAULT_MAX_TRIALS}",
    )
    group.add_argument(
        "--max-minutes",
        type=positive_float,
        default=None,
        metavar="M",
        help="start no trial after M minutes of search (the retraining "
        "comes after). Default: no limit",
    )
    group.add_argument(
        "--retrain-top",
        type=non_negative_int,
        default=DEFAULT_RETRAIN_TOP,
        metavar="K",
        help="retrain the K best distinct trials and the defaults, choose "
        "on validation; 0 takes the best trial as scored. Default: "
        f"{DEFAULT_RETRAIN_TOP}",
    )
    group.add_argument(
        "--seeds",
        type=positive_int,
        default=1,
        metavar="N",
        help="seeds per retrained configuration (--seed, --seed + 1, ...). "
        "Default: 1",
    )
    group.add_argument(
        "--choices",
        action="append",
        metavar="NAME=V1,V2",
        help="search NAME over these values only (repeatable); tuple "
        "settings separate values with ';', e.g. "
        "'cpr_reranker_ks=none;20;20,100'",
    )
    group.add_argument(
        "--overwrite",
        action="store_true",
        help="discard an earlier search in the same folder (any space, "
        "data or budget) and start afresh, instead of resuming it or "
        "refusing it",
    )


def _defaults_config(args: argparse.Namespace) -> TrainConfig:
    """The ``TrainConfig`` of the defaults (the first trial, and the
    selection's reference): train's batch size and learning rate unless
    given. The search folder is --output-dir; the chosen configuration's
    runs go to train's folder."""
    values = dict(vars(args))
    for name in ("batch_size", "learning_rate"):
        if values[name] is None:
            values[name] = field_default(TrainConfig, name)
    values["output_dir"] = field_default(TrainConfig, "output_dir")
    return train_config(argparse.Namespace(**values))


def check(args: argparse.Namespace) -> None:
    """What ``run`` refuses first, checked before TensorFlow loads
    (``cli.main``): the options (``TrainConfig``). The rest (``--choices``,
    the budget, the search folder, the data) is checked by ``run_search``,
    in its order, before any trial."""
    _defaults_config(args)


def run(args: argparse.Namespace) -> int:
    import os

    from tfrec_tricks.errors import writes_named
    from tfrec_tricks.tuning import selection
    from tfrec_tricks.tuning.search import (
        SearchOptions,
        parse_choices,
        run_search,
    )

    fixed = {
        name: getattr(args, name)
        for name in ("batch_size", "learning_rate")
        if getattr(args, name) is not None
    }
    config = _defaults_config(args)
    options = SearchOptions(
        tuner=args.tuner,
        max_trials=args.max_trials,
        output_dir=args.output_dir,
        fixed=fixed,
        hyperparameters=parse_choices(args.choices),
        overwrite=args.overwrite,
        verbose=0 if args.quiet else None,
        max_minutes=args.max_minutes,
        retrain_top=args.retrain_top,
        seeds=args.seeds,
    )
    # A trial that cannot write stops the search (tuners.py), as Ctrl-C
    # does: named here, by the search folder; the retrained runs name
    # their run directories (training.train).
    with writes_named(os.path.join(args.output_dir, config.run_name)):
        result = run_search(config, options)
    if result.role == "worker":
        print(
            f"Worker finished; the chief writes the reports to "
            f"{result.output_dir}."
        )
    elif args.quiet:
        from tfrec_tricks.tuning.search_reports import format_summary

        rows = result.selection
        print(
            format_summary(
                result.trials,
                result.best_config,
                result.output_dir,
                result.hypermodel.objective.name,
                result.seconds,
                selection.pick(rows) if rows else None,
                rows[0] if rows else None,
                config.epochs,
            )
        )
    return 0
