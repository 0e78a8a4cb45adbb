"""``tfrec-tricks tune``: a KerasTuner search over techniques and settings."""

import argparse

from tfrec_tricks.cli.options import positive_int

HELP = "search the techniques and settings with KerasTuner"
USES_CONFIG = True
# The search loads its data in memory and distributes trials with
# KerasTuner's own chief / workers, not a prepared dataset or TF_CONFIG;
# trials select on full ranking only (no sampled-negative evaluation).
SKIP_FIELDS = ("prepared", "distribute", "eval_negatives")
DESCRIPTION = """\
Search with KerasTuner over the techniques (output head, CPR partitions,
reranker sizes, Mi, tied embeddings, SSE probabilities, soft one-hot
features and buckets) and the usual settings (encoder, embedding size,
layers, dropout, learning rate, batch size), maximising validation NDCG@10.
Each trial trains for at most --epochs epochs (early stopping after
--patience epochs without progress).

Model options and --batch-size / --learning-rate given on the command line
(or by --config) are fixed; the others are searched. --choices narrows one
setting to a list.

Writes OUTPUT_DIR/NAME/: best_config.json (`tfrec-tricks train --config`
accepts it), trials.md (table), trials.png (score per trial), tensorboard/
(hparams) and search/ (KerasTuner's project). An interrupted search resumes
when the same command runs again (completed trials are kept); --overwrite
starts afresh.

Distributed: run the same command on every machine with
KERASTUNER_ORACLE_IP, KERASTUNER_ORACLE_PORT and KERASTUNER_TUNER_ID set
(one process with KERASTUNER_TUNER_ID=chief serves the oracle and writes the
reports; the workers, e.g. tuner0, tuner1, ... run the trials) and
OUTPUT_DIR on a shared file system.

examples:
  tfrec-tricks tune --max-trials 20
  tfrec-tricks tune --data ml-100k --tuner bayesian --max-trials 30
  tfrec-tricks tune --tuner hyperband --epochs 27 --head cpr \\
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
        choices=("random", "bayesian", "hyperband"),
        default="random",
        help="KerasTuner's RandomSearch, BayesianOptimization or Hyperband "
        "(its largest budget is --epochs). Default: random",
    )
    group.add_argument(
        "--max-trials",
        type=positive_int,
        default=10,
        metavar="N",
        help="trials to run (Hyperband: at most). Default: 10",
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
        help="discard an earlier search in the same folder instead of "
        "resuming it",
    )


def run(args: argparse.Namespace) -> int:
    from tfrec_tricks.cli.parser import train_config
    from tfrec_tricks.tuning.search import parse_choices, run_search

    fixed = {
        name: getattr(args, name)
        for name in ("batch_size", "learning_rate")
        if getattr(args, name) is not None
    }
    # The search folder is --output-dir; the best configuration's runs go
    # to train's default folder.
    values = dict(vars(args), batch_size=128, learning_rate=1e-3)
    values["output_dir"] = "runs"
    config = train_config(argparse.Namespace(**values))
    result = run_search(
        config,
        tuner=args.tuner,
        max_trials=args.max_trials,
        output_dir=args.output_dir,
        fixed=fixed,
        hyperparameters=parse_choices(args.choices),
        overwrite=args.overwrite,
        verbose=0 if args.quiet else None,
    )
    if result.role == "worker":
        print(
            f"Worker finished; the chief writes the reports to "
            f"{result.output_dir}."
        )
    elif args.quiet:
        from tfrec_tricks.tuning.search import format_summary

        print(
            format_summary(
                result.trials,
                result.best_config,
                result.output_dir,
                result.hypermodel.objective.name,
                result.seconds,
            )
        )
    return 0
