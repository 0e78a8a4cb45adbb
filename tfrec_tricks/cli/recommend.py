"""``tfrec-tricks recommend``: a finished run's top-k lists for every user."""

import argparse
import sys

from tfrec_tricks.cli.options import positive_int
from tfrec_tricks.data.loaders import FORMATS

HELP = "write top-k recommendations for every user of a run to a file"
USES_CONFIG = False
DESCRIPTION = """\
Write a file of top-k recommendations: a row per (user, rank), raw ids,
columns user_id, rank (from 1), item_id, score (the model's logit). Each user
is ranked with their whole known history: every interaction the run's data
holds of them (training, validation and test alike, after the run's
filters), or with --histories, new users' interactions. The lists come from
the code `export` serves (the same answers as the SavedModel's), a batch of
users at a time.

A user's own items are never recommended (--keep-seen allows them), nor the
items of --exclude-items; --items limits the lists to its items. A user with
fewer eligible items than --k gets fewer rows.

The format follows --output's ending (.csv, .jsonl, .parquet) unless
--format says. The file is written aside and renamed when complete: an
error or Ctrl-C leaves nothing. An existing file is never replaced.

Id files (--users, --items, --exclude-items) hold one raw id a line; an id
the run does not know is refused, named by file and line.

examples:
  tfrec-tricks recommend runs/ml-1m --k 10 --output recs.csv
  tfrec-tricks recommend runs/ml-1m --users vip.txt --output vip.jsonl
  tfrec-tricks recommend runs/shop --items in-stock.txt \\
      --exclude-items recalled.txt --output recs.parquet
  tfrec-tricks recommend runs/ml-1m --histories new-users.tsv \\
      --histories-format udata --output new.csv
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "run_dir", metavar="RUN_DIR", help="a finished training run"
    )
    parser.add_argument(
        "--output",
        required=True,
        metavar="FILE",
        help="the file to write (.csv, .jsonl or .parquet); it must not exist",
    )
    parser.add_argument(
        "--format",
        choices=("csv", "jsonl", "parquet"),
        help="the output format. Default: from --output's ending",
    )
    parser.add_argument(
        "--k",
        type=positive_int,
        default=10,
        help="items per user, at most the catalogue. Default: 10",
    )
    parser.add_argument(
        "--users",
        metavar="FILE",
        help="rank only these users (one raw id a line). Default: every "
        "user of the run's data (or of --histories)",
    )
    parser.add_argument(
        "--histories",
        metavar="FILE",
        help="new users' interactions, in any format `train` reads: "
        "ranked instead of the run's users, each with the history FILE "
        "holds (items the run does not know are left out)",
    )
    parser.add_argument(
        "--histories-format",
        default="auto",
        choices=("auto", *FORMATS),
        help="the format of --histories. Default: auto (guessed from its "
        "first line)",
    )
    parser.add_argument(
        "--items",
        metavar="FILE",
        help="allow-list: recommend only these items (one raw id a line)",
    )
    parser.add_argument(
        "--exclude-items",
        metavar="FILE",
        help="deny-list: never recommend these items (one raw id a line)",
    )
    parser.add_argument(
        "--keep-seen",
        action="store_true",
        help="let a user's own items be recommended (by default they never "
        "are)",
    )
    parser.add_argument(
        "--batch-size",
        type=positive_int,
        default=256,
        metavar="N",
        help="users ranked at a time (memory holds one batch of rows). "
        "Default: 256",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress bar")


def run(args: argparse.Namespace) -> int:
    import os

    from tfrec_tricks.errors import writes_named
    from tfrec_tricks.recommendation.writers import (
        check_output,
        output_format,
    )

    # Refused before anything is loaded.
    named = [args.users, args.items, args.exclude_items, args.histories]
    check_output(args.output, [args.run_dir, *filter(None, named)])
    file_format = output_format(args.output, args.format)
    job = _job(args)

    from tqdm import tqdm

    from tfrec_tricks.recommendation.writers import staged_output

    target = os.path.dirname(os.path.abspath(args.output))
    with (
        writes_named(target),
        staged_output(args.output, file_format) as writer,
        tqdm(
            total=job.num_users,
            unit=" users",
            disable=True if args.quiet else None,
            file=sys.stderr,
        ) as bar,
    ):
        for frame in job.batches(progress=bar.update):
            writer.write(frame)
    print(
        f"Wrote {writer.rows:,} recommendations for {job.num_users:,} users "
        f"to {args.output} ({job.describe()})."
    )
    return 0


def _job(args: argparse.Namespace):
    """The ``RecommendationJob`` of the arguments: the files read into
    the lists and table it takes."""
    from tfrec_tricks.recommendation import (
        RecommendationJob,
        RecommendationOptions,
    )
    from tfrec_tricks.recommendation.history_frames import read_histories
    from tfrec_tricks.recommendation.id_lists import read_id_list

    lists = {
        name: None if path is None else read_id_list(path)
        for name, path in (
            ("users", args.users),
            ("items", args.items),
            ("exclude_items", args.exclude_items),
        )
    }
    if args.histories is not None:
        lists["histories"] = read_histories(
            args.histories, args.histories_format
        )
        lists["histories_name"] = args.histories
    options = RecommendationOptions(
        k=args.k, keep_seen=args.keep_seen, batch_size=args.batch_size, **lists
    )
    return RecommendationJob(args.run_dir, options)
