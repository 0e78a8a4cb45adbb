"""``tfrec-tricks recommend``: a finished run's top-k lists for every user."""

import argparse
import sys

from tfrec_tricks.cli.options import non_negative_float, positive_int
from tfrec_tricks.data.sources.loaders import FORMATS
from tfrec_tricks.data.sources.named_sources import check_source_headers

HELP = "write top-k recommendations for every user of a run to a file"
ENGINES = ("local", "beam")
# Flags of --engine beam only.
BEAM_ONLY = ("saved_model", "shards", "beam_runner")
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

New items (a model trained with --item-features): an item of the run's
catalogue that no training interaction holds is ranked by its attributes,
and seldom scores into a top 10 against items with a trained identity.
--new-item-slots R keeps the last R places of each list for the user's best
new items (the top k - R items, then the R best new items not among them):
a shop's "new this week", at the cost to the other places that
docs/side-information.md measures. --new-item-boost B raises every new
item's score by B standard deviations of the user's scores instead, so new
items enter the lists where they come close to the trained ones (on Amazon
Sports, B = 0.5 put 19x random of the new items' targets in a top 10 for
1.8% of the other targets' NDCG@10).

Id files (--users, --items, --exclude-items) hold one raw id a line; an id
the run does not know is refused, named by file and line.

engines (the same rows: users, ranks, items, and scores within float32
rounding):
  local   ranks in this process, a batch of users at a time, into one file.
          One machine, up to millions of users.
  beam    exports the run as a SavedModel (or reads --saved-model DIR, an
          exported version) and ranks in an Apache Beam pipeline with
          RunInference, each worker loading the SavedModel TF Serving
          serves (pip install "tfrec_tricks[beam]"). --output is then a
          folder of shards, OUTPUT/part-00000-of-00004.csv ... (each CSV
          shard with its header; users in no particular order), published
          whole when complete. The DirectRunner runs it here; --beam-runner
          and Beam pipeline options after the flags choose another runner,
          e.g. --beam-runner DataflowRunner --project P --region R
          --temp_location gs://B/tmp (then give --saved-model on gs://, and
          --output on a file system this machine and the workers mount).
          For histories one machine does not hold (a run trained on a
          prepared dataset: the workers read its shards) or a cluster.

examples:
  tfrec-tricks recommend runs/ml-1m --k 10 --output recs.csv
  tfrec-tricks recommend runs/ml-1m --users vip.txt --output vip.jsonl
  tfrec-tricks recommend runs/shop --items in-stock.txt \\
      --exclude-items recalled.txt --output recs.parquet
  tfrec-tricks recommend runs/ml-1m --histories new-users.tsv \\
      --histories-format udata --output new.csv
  tfrec-tricks recommend runs/ml-1m --engine beam --shards 4 \\
      --output recs.csv      # recs.csv/part-00000-of-00004.csv ...
  tfrec-tricks recommend runs/ml-1m --engine beam \\
      --saved-model saved_models/ml1m/3 --output recs.parquet
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "run_dir", metavar="RUN_DIR", help="a finished training run"
    )
    parser.add_argument(
        "--output",
        required=True,
        metavar="FILE",
        help="the file to write (.csv, .jsonl or .parquet; with --engine "
        "beam, a folder of shards); it must not exist",
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
        "--new-item-slots",
        type=int,
        default=0,
        metavar="R",
        help="keep the last R places of each list for the best new items "
        "(items no training interaction holds, ranked by their "
        "attributes; a model trained with --item-features). Default: 0",
    )
    parser.add_argument(
        "--new-item-boost",
        type=non_negative_float,
        default=0.0,
        metavar="B",
        help="raise each new item's score by B standard deviations of the "
        "user's scores, so that new items enter the lists where they come "
        "close (a model trained with --item-features). Default: 0",
    )
    parser.add_argument(
        "--batch-size",
        type=positive_int,
        default=256,
        metavar="N",
        help="users ranked at a time (memory holds one batch of rows; "
        "--engine beam: users per RunInference batch). Default: 256",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    beam = parser.add_argument_group("engine")
    beam.add_argument(
        "--engine",
        choices=ENGINES,
        default="local",
        help="local (this process, one file) or beam (an Apache Beam "
        "pipeline, a folder of shards; see above). Default: local",
    )
    beam.add_argument(
        "--saved-model",
        metavar="DIR",
        help="--engine beam: an exported version of the run (tfrec-tricks "
        "export: saved_models/NAME/VERSION, with --k at least --k) that "
        "the workers load. Default: the run exported into a temporary "
        "folder",
    )
    beam.add_argument(
        "--shards",
        type=positive_int,
        metavar="N",
        help="--engine beam: files in the --output folder. Default: the "
        "runner chooses",
    )
    beam.add_argument(
        "--beam-runner",
        metavar="RUNNER",
        help="--engine beam: Beam runner, e.g. DataflowRunner, FlinkRunner, "
        "SparkRunner (same as Beam's --runner). Default: DirectRunner",
    )


def check(args: argparse.Namespace) -> None:
    """What ``run`` refuses first, in its order, checked before TensorFlow
    loads (``cli.main``): the Beam flags, ``--output`` and its format, the
    id files (read whole), the header of ``--histories`` and the run
    directory (missing, not finished or not whole).

    With ``--engine beam`` and no Apache Beam installed, only the first
    three: ``run`` names the missing extra before it reads any file. The
    rows of ``--histories``, the ids against the run and the model are
    checked by ``run``.
    """
    import importlib.util

    from tfrec_tricks.recommendation.id_lists import read_id_list
    from tfrec_tricks.training.run_directory import check_finished_run

    _checked_output(args)
    if (
        args.engine == "beam"
        and importlib.util.find_spec("apache_beam") is None
    ):
        return
    for path in (args.users, args.items, args.exclude_items):
        if path is not None:
            read_id_list(path)
    if args.histories is not None:
        check_source_headers("file", args.histories, args.histories_format)
    check_finished_run(args.run_dir)


def _checked_output(args: argparse.Namespace) -> tuple[list[str], str]:
    """Beam's pipeline options and the output's format, once the Beam flags
    and ``--output`` (``check_output``) are checked."""
    from tfrec_tricks.recommendation.writers import (
        check_output,
        output_format,
    )

    pipeline_args = _beam_arguments(args)
    named = [args.users, args.items, args.exclude_items, args.histories]
    named.append(args.saved_model)
    check_output(args.output, [args.run_dir, *filter(None, named)])
    return pipeline_args, output_format(args.output, args.format)


def run(args: argparse.Namespace) -> int:
    import os

    from tfrec_tricks.errors import writes_named

    # Refused before anything is loaded (again: ``check`` ran before
    # TensorFlow's start-up, and a file may have appeared since).
    pipeline_args, file_format = _checked_output(args)
    if args.engine == "beam":
        return _run_beam(args, file_format, pipeline_args)
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


def _beam_arguments(args: argparse.Namespace) -> list[str]:
    """Beam's pipeline options (``--beam-runner`` and the flags Beam
    reads); refuses the Beam engine's flags without ``--engine beam``."""
    if args.engine != "beam":
        given = [
            "--" + name.replace("_", "-")
            for name in BEAM_ONLY
            if getattr(args, name) is not None
        ]
        given += list(getattr(args, "pipeline_args", []))
        if given:
            verb = "apply" if len(given) > 1 else "applies"
            raise ValueError(
                f"{' '.join(given)} {verb} to --engine beam only. Received: "
                f"--engine {args.engine}"
            )
        return []
    extra = list(getattr(args, "pipeline_args", []))
    if args.beam_runner:
        extra = [f"--runner={args.beam_runner}", *extra]
    return extra


def _run_beam(
    args: argparse.Namespace, file_format: str, pipeline_args: list[str]
) -> int:
    """``--engine beam``: the job's lists by a Beam pipeline, into a
    folder of shards."""
    import logging

    if not args.verbose:
        # Beam logs notices of optional packages (GCP clients, faster
        # CRCs) at WARNING; --verbose shows them.
        logging.getLogger().setLevel(logging.ERROR)
    # Imported first: a missing extra is named before anything loads.
    from tfrec_tricks.recommendation.beam_engine import recommend_with_beam

    job = _job(args)

    from tfrec_tricks.errors import writes_named

    with writes_named(args.output):
        written = recommend_with_beam(
            job,
            args.output,
            file_format,
            saved_model=args.saved_model,
            num_shards=args.shards,
            pipeline_args=pipeline_args,
        )
    files = written.files
    shown = ", ".join(files[:2]) + (", ..." if len(files) > 2 else "")
    print(
        f"Wrote {written.rows:,} recommendations for {job.num_users:,} "
        f"users to {args.output} ({len(files)} files: {shown}; "
        f"{job.describe()})."
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
        k=args.k,
        keep_seen=args.keep_seen,
        batch_size=args.batch_size,
        new_item_slots=args.new_item_slots,
        new_item_boost=args.new_item_boost,
        **lists,
    )
    return RecommendationJob(args.run_dir, options)
