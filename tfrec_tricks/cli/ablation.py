"""``tfrec-tricks ablation``: the paper's variants with one budget."""

import argparse
import os
import shlex
import sys

from tfrec_tricks.cli.options import (
    add_overwrite_argument,
    probability,
    train_config,
)
from tfrec_tricks.data.sources.named_sources import check_source_headers

HELP = "train the paper's variants with one budget; table and chart"
USES_CONFIG = True
# Rows train in memory, one process each (train --prepared and
# multi-worker runs are for single runs).
SKIP_FIELDS = ("prepared", "distribute")
DESCRIPTION = """\
Train the variants of Chang et al. (2024)'s ablation on one data set with one
encoder, the same seed and the same budget: Softmax, Softmax + Mi, + C, + CP,
+ CPR:100, + CPR:100 + Mi, + CPR:20,100,500 + Mi, MoS, Softmax w/o
duplication (and, with --rows, untied embeddings, SSE, soft one-hot time
gap, CPR:100 + Mi with partition logits added to the base logit). Each
variant gets the same dropout sweep (--dropouts), is selected on
validation NDCG@10 and reported on test. Writes ablation.md (table),
ablation.json and ablation.png (chart) to --report-dir. All training options
apply to every variant.

examples:
  tfrec-tricks ablation --data yoochoose-100k --encoder sasrec
  tfrec-tricks ablation --rows Softmax "Softmax + CPR:100 + Mi" --epochs 5
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from tfrec_tricks.training.ablation_rows import PAPER_ROWS, ROWS

    add_overwrite_argument(parser)
    group = parser.add_argument_group("ablation")
    group.add_argument(
        "--rows",
        nargs="+",
        choices=list(ROWS),
        metavar="ROW",
        default=list(PAPER_ROWS),
        help="variants to train, from: "
        + "; ".join(ROWS)
        + ". Default: the paper's nine",
    )
    group.add_argument(
        "--dropouts",
        nargs="+",
        type=probability,
        default=[0.2, 0.5],
        metavar="P",
        help="dropout sweep for every variant. Default: 0.2 0.5",
    )
    group.add_argument(
        "--report-dir",
        metavar="DIR",
        help="where the table and chart go. Default: OUTPUT_DIR/NAME-ablation",
    )


def _report_dir(args: argparse.Namespace, base) -> str:
    """``--report-dir``, else OUTPUT_DIR/NAME-ablation."""
    return args.report_dir or os.path.join(
        base.output_dir, f"{base.run_name}-ablation"
    )


def check(args: argparse.Namespace) -> None:
    """What ``run`` refuses first, checked before TensorFlow loads
    (``cli.main``): the options, a report folder that may not be written,
    and the data's files and headers (as ``train`` checks them for each
    row's run)."""
    from tfrec_tricks.training.ablation_rows import check_report_dir
    from tfrec_tricks.training.run_inputs import input_paths

    base = train_config(args)
    check_report_dir(_report_dir(args, base), input_paths(base))
    check_source_headers(base.data, base.data_path, base.file_format)


def run(args: argparse.Namespace) -> int:
    from tfrec_tricks.errors import writes_named
    from tfrec_tricks.training.ablation import (
        check_report_dir,
        format_table,
        run_ablation,
        write_report,
    )
    from tfrec_tricks.training.run_inputs import input_paths

    base = train_config(args)
    report_dir = _report_dir(args, base)
    # Refused before hours of training, not after (again: check ran before
    # TensorFlow's start-up).
    check_report_dir(report_dir, input_paths(base))
    rows = run_ablation(
        base,
        args.rows,
        tuple(args.dropouts),
        verbose=0 if args.quiet else 2,
        overwrite=args.overwrite,
    )
    encoder = base.model.value("encoder")
    # The rows' runs name their run directories (training.train).
    with writes_named(report_dir):
        paths = write_report(
            rows,
            report_dir,
            f"{base.data}, {encoder}: ablation",
            shlex.join(["tfrec-tricks", *sys.argv[1:]]),
        )
    print(format_table(rows))
    print(f"\nTable: {paths['md']}\nChart: {paths['png']}")
    return 0
