"""What the benchmark scripts share: options, run naming, report files.

- Options: ``build_parser`` and the ``add_*`` functions add the options
  several scripts take (data, split, training budget and runs folder,
  seed, report folder), with the same names, types and defaults in each.
- Run naming: ``command_line`` is the command a report quotes to rerun
  it; ``module_command`` starts a script as a child process;
  ``report_stem`` names a report's files.
- Data files: ``add_file_options`` (``--format``, ``--max-sessions``),
  ``data_file_path`` (a file of the first sessions) and ``data_label``.
- Report writing: ``write_report`` writes a report's markdown, its numbers
  (JSON) and its chart (PNG) next to each other.

Imports ``tfrec_tricks.data``, and so TensorFlow: a script calls
``use_legacy_keras()`` before it imports this module.
"""

import argparse
import json
import os
import re
import shlex
import statistics
import subprocess
import sys
import time
from collections.abc import Callable

from tfrec_tricks.data.in_memory_dataset import SPLITS
from tfrec_tricks.data.sources.loaders import FORMATS

#: The repository root, the working folder of ``module_command``'s child.
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
#: Where the reports go by default: ``benchmarks/results``.
RESULTS = os.path.join(ROOT, "benchmarks", "results")
#: Where the training scripts' runs go by default (from the working
#: folder, as ``tfrec-tricks train --output-dir``).
OUTPUT_DIR = "runs/benchmarks"
#: The split a report's name leaves out (``report_stem``).
DEFAULT_SPLIT = "recbole"


def build_parser(description: str) -> argparse.ArgumentParser:
    """A script's parser; ``description`` (its docstring) keeps its lines."""
    return argparse.ArgumentParser(
        description=description,
        formatter_class=argparse.RawTextHelpFormatter,
    )


def add_data_path_option(parser: argparse.ArgumentParser) -> None:
    """``--data-path``: the folder of the real datasets."""
    parser.add_argument(
        "--data-path",
        default=None,
        help="real datasets' folder. Default: $TFREC_TRICKS_DATA or "
        "../shared/data",
    )


def add_data_options(
    parser: argparse.ArgumentParser, default: str, data_help: str = ""
) -> None:
    """``--data`` (a data source, ``default`` by default), ``--data-path``."""
    parser.add_argument(
        "--data",
        default=default,
        help=data_help
        or f"data source (see tfrec-tricks train --help). Default: {default}",
    )
    add_data_path_option(parser)


def add_format_option(parser: argparse.ArgumentParser) -> None:
    """``--format`` of ``--data file`` (``args.file_format``)."""
    parser.add_argument(
        "--format",
        dest="file_format",
        choices=("auto", *FORMATS),
        default="auto",
        help="format of --data file. Default: auto",
    )


def add_file_options(parser: argparse.ArgumentParser) -> None:
    """``--format`` of ``--data file`` and ``--max-sessions N``.

    With ``--name``, the option that names the runs and the report
    (``data_label``), the script must add itself.
    """
    add_format_option(parser)
    parser.add_argument(
        "--max-sessions",
        type=int,
        default=None,
        metavar="N",
        help="with --data file, keep the file's first N sessions (users). "
        "Default: all",
    )


def check_file_options(
    parser: argparse.ArgumentParser, args: argparse.Namespace
) -> None:
    """Exits with a usage error for ``add_file_options`` misused."""
    if args.max_sessions is not None and (
        args.data != "file" or args.max_sessions < 1
    ):
        parser.error(
            "--max-sessions takes a positive count and --data file. "
            f"Received: --max-sessions {args.max_sessions} --data {args.data}"
        )
    if args.data == "file" and not args.data_path:
        parser.error("--data file needs --data-path FILE")


#: Users and items of ``--data synthetic`` unless given: train's defaults
#: (``TrainConfig.synthetic_users`` / ``synthetic_items``; a test pins them
#: equal without importing TensorFlow here).
SYNTHETIC_SIZE = 1000


def add_synthetic_options(parser: argparse.ArgumentParser) -> None:
    """``--synthetic-users N`` and ``--synthetic-items N`` of ``--data
    synthetic`` (``SYNTHETIC_SIZE`` each unless given)."""
    for what in ("users", "items"):
        parser.add_argument(
            f"--synthetic-{what}",
            type=int,
            default=SYNTHETIC_SIZE,
            metavar="N",
            help=f"with --data synthetic, the generated {what}. "
            f"Default: {SYNTHETIC_SIZE}",
        )


def data_file_path(args: argparse.Namespace) -> str | None:
    """``--data-path``, or the subset file of ``--max-sessions`` (written
    under ``<output-dir>/data`` by ``first_sessions``)."""
    if args.data == "file" and args.max_sessions is not None:
        return first_sessions(
            args.data_path,
            args.max_sessions,
            os.path.join(args.output_dir, "data"),
        )
    return args.data_path


def data_label(args: argparse.Namespace, by_name: bool = True) -> str:
    """What the runs and the report are named after.

    ``--name`` when given and ``by_name``; else the data source (with
    ``-UxI`` for synthetic data of other sizes than 1,000 x 1,000), or the
    file's stem (with ``-N`` for ``--max-sessions N``).
    """
    if by_name and args.name:
        return args.name
    sizes = (
        getattr(args, "synthetic_users", SYNTHETIC_SIZE),
        getattr(args, "synthetic_items", SYNTHETIC_SIZE),
    )
    if args.data == "synthetic" and sizes != (SYNTHETIC_SIZE,) * 2:
        return f"synthetic-{sizes[0]}x{sizes[1]}"
    if args.data != "file":
        return args.data
    stem = os.path.splitext(os.path.basename(args.data_path or "file"))[0]
    return stem if args.max_sessions is None else f"{stem}-{args.max_sessions}"


def first_sessions(path: str, max_sessions: int, directory: str) -> str:
    """Writes the first ``max_sessions`` sessions of a file; its path.

    A session (user) is the first column of a line; the header (a first
    line naming ``SessionId`` or ``user``) is kept. The lines of a session
    need not be adjacent: the sessions kept are the first ``max_sessions``
    distinct ids, in the order the file first names them. Written as
    ``<directory>/<stem>-first<N><suffix>``, the same bytes for the same
    input, so that runs on it are reused.
    """
    if max_sessions < 1:
        raise ValueError(
            f"max_sessions must be positive. Received: {max_sessions}"
        )
    stem, suffix = os.path.splitext(os.path.basename(path))
    target = os.path.join(directory, f"{stem}-first{max_sessions}{suffix}")
    kept, lines = set(), []
    with open(path) as handle:
        for number, line in enumerate(handle):
            fields = line.replace("::", "\t").split(None, 1)
            if not fields:
                continue
            if number == 0 and fields[0].lower() in ("sessionid", "user"):
                lines.append(line)
                continue
            if fields[0] not in kept:
                if len(kept) == max_sessions:
                    continue
                kept.add(fields[0])
            lines.append(line)
    text = "".join(lines)
    if os.path.isfile(target):
        with open(target) as handle:
            if handle.read() == text:
                return target
    os.makedirs(directory, exist_ok=True)
    partial = target + ".partial"
    with open(partial, "w") as handle:
        handle.write(text)
    os.replace(partial, target)
    return target


COUNT_SUFFIXES = {"": 1, "k": 1_000, "m": 1_000_000}


def count(text: str) -> int:
    """argparse type of a positive count: ``50000000`` or ``50M``.

    >>> count("50M"), count("250k"), count("1000")
    (50000000, 250000, 1000)
    """
    match = re.fullmatch(r"\s*(\d+)\s*([kKmM]?)\s*", text)
    if not match or int(match.group(1)) <= 0:
        raise argparse.ArgumentTypeError(
            f"expected a positive number, optionally with k or M. "
            f"Received: {text!r}"
        )
    return int(match.group(1)) * COUNT_SUFFIXES[match.group(2).lower()]


def count_list(text: str) -> list[int]:
    """argparse type: comma-separated positive counts (``count``), in the
    order given.

    >>> count_list("3706, 1M")
    [3706, 1000000]
    """
    values = [count(part) for part in text.split(",") if part.strip()]
    if not values:
        raise argparse.ArgumentTypeError(
            f"expected positive numbers, comma-separated. Received: {text!r}"
        )
    return values


def name_list(known: tuple[str, ...], what: str) -> Callable[[str], list]:
    """An argparse type: comma-separated names among ``known``.

    The type returns the names in the order given, each once; no name, or
    one not in ``known``, is a usage error naming ``known``.

    >>> name_list(("a", "b", "c"), "letters")("c, a,c")
    ['c', 'a']
    """

    def parse(text: str) -> list[str]:
        names = [part.strip() for part in text.split(",") if part.strip()]
        if not names or any(name not in known for name in names):
            raise argparse.ArgumentTypeError(
                f"{what} are {', '.join(known)}, comma-separated. "
                f"Received: {text!r}"
            )
        return list(dict.fromkeys(names))

    return parse


def add_split_option(parser: argparse.ArgumentParser) -> None:
    """``--split``: the leave-one-out split, RecBole's by default."""
    parser.add_argument(
        "--split",
        choices=tuple(SPLITS),
        default=DEFAULT_SPLIT,
        help="leave-one-out split (see tfrec-tricks train --help). "
        f"Default: {DEFAULT_SPLIT}",
    )


def add_training_options(
    parser: argparse.ArgumentParser,
    epochs: int,
    patience: int,
    epochs_help: str = "maximum epochs per run",
) -> None:
    """A training script's budget and runs folder.

    ``--epochs`` (default ``epochs``), ``--patience`` (epochs without a
    better validation NDCG@10 before early stopping, default ``patience``)
    and ``--output-dir`` (default ``OUTPUT_DIR``).
    """
    parser.add_argument(
        "--epochs",
        type=int,
        default=epochs,
        help=f"{epochs_help}. Default: {epochs}",
    )
    parser.add_argument(
        "--patience",
        type=int,
        default=patience,
        help=f"early-stopping patience, in epochs. Default: {patience}",
    )
    parser.add_argument(
        "--output-dir",
        default=OUTPUT_DIR,
        help=f"where the runs go. Default: {OUTPUT_DIR}",
    )


def add_window_options(parser: argparse.ArgumentParser) -> None:
    """``--train-windows`` and ``--window-stride`` (``TrainConfig``'s
    ``train_windows`` and ``window_stride``)."""
    parser.add_argument(
        "--train-windows",
        action="store_true",
        help="train on windows of max_len items with a target at every "
        "position (see tfrec-tricks train --help)",
    )
    parser.add_argument(
        "--window-stride",
        type=int,
        default=0,
        metavar="S",
        help="with --train-windows, targets between window ends. "
        "Default: 0 (max_len)",
    )


def add_seed_option(parser: argparse.ArgumentParser) -> None:
    """``--seed``: a run's seed (initial weights, shuffling, dropout)."""
    parser.add_argument(
        "--seed",
        type=int,
        default=0,
        help="seed of weights, shuffling and dropout. Default: 0",
    )


def add_report_dir_option(parser: argparse.ArgumentParser) -> None:
    """``--report-dir``: where the report goes, ``RESULTS`` by default."""
    parser.add_argument(
        "--report-dir",
        default=RESULTS,
        help="where the report (table, chart) goes. "
        "Default: benchmarks/results",
    )


def json_object(value: str) -> dict:
    """argparse type of a JSON option of model settings: a JSON object."""
    try:
        parsed = json.loads(value)
    except json.JSONDecodeError as error:
        raise argparse.ArgumentTypeError(
            f"not valid JSON ({error}). Received: {value!r}"
        ) from None
    if not isinstance(parsed, dict):
        raise argparse.ArgumentTypeError(
            "must be a JSON object, e.g. '{\"num_layers\": 2}'. Received: "
            f"{value!r}"
        )
    return parsed


def executable_file(value: str) -> str:
    """argparse type of an interpreter option: an executable file."""
    if not (os.path.isfile(value) and os.access(value, os.X_OK)):
        raise argparse.ArgumentTypeError(
            f"not an executable file. Received: {value!r}"
        )
    return value


def command_line(script: str, argv: list[str] | None = None) -> str:
    """The command that reruns a script, as its report quotes it.

    Args:
        script: the script's module name in ``benchmarks``, e.g.
            ``"seed_spread"``.
        argv: the arguments ``main`` was given; ``None`` (the command
            line's) reads ``sys.argv[1:]``.

    Returns:
        ``python -m benchmarks.<script> ARGS``, each argument quoted for
        a POSIX shell where it needs to be.
    """
    arguments = sys.argv[1:] if argv is None else argv
    return shlex.join(["python", "-m", f"benchmarks.{script}", *arguments])


def module_command(script: str) -> list[str]:
    """The argv that starts ``benchmarks.<script>`` in a child process.

    The child runs this interpreter; start it in ``ROOT`` (``cwd=ROOT``)
    so that ``benchmarks`` is importable whatever the parent's folder.
    """
    return [sys.executable, "-m", f"benchmarks.{script}"]


def run_settings(config) -> dict:
    """What a run's options resolve to, as JSON: a ``TrainConfig``'s
    settings less the seed, the run's name and where runs and data are.

    A report records it beside each seed's metrics, so that a later run
    of the script carries the seed over only while the same options still
    mean the same training (a recipe or a default may change).
    """
    settings = config.to_dict()
    for name in ("seed", "name", "output_dir", "data_path"):
        settings.pop(name)
    return json.loads(json.dumps(settings))


def carried_over(
    recorded: tuple | None, config, who: str, settings: dict | None = None
) -> dict | None:
    """A seed's metrics from a report's record, when they still apply.

    Args:
        recorded: ``(metrics, settings)`` as the report recorded them (the
            settings are None in reports from before they were recorded),
            or None.
        config: the ``TrainConfig`` the seed would train with now.
        who: names the seed in the note printed when the record is
            refused, e.g. ``"Row 'SASRec', seed 1"``.
        settings: what the record's settings must equal; None:
            ``run_settings(config)``.

    Returns:
        The recorded metrics while they trained with ``config``'s
        settings (``run_settings``); None otherwise, with a note on
        stderr when a record was refused.
    """
    if recorded is None:
        return None
    metrics, recorded_settings = recorded
    if settings is None:
        settings = run_settings(config)
    if recorded_settings is None or recorded_settings == settings:
        return metrics
    print(
        f"{who}: the record was trained with other settings (a recipe or "
        "a default changed); not carried over.",
        file=sys.stderr,
    )
    return None


def summarise(values: list[float]) -> dict:
    """A metric over seeds: its mean, range and values, as the reports
    give it (``mean [min, max]``).

    >>> summarise([2.0, 1.0, 6.0])
    {'mean': 3.0, 'min': 1.0, 'max': 6.0, 'values': [2.0, 1.0, 6.0]}
    """
    return {
        "mean": statistics.fmean(values),
        "min": min(values),
        "max": max(values),
        "values": values,
    }


def signed_percent(change: float) -> str:
    """A relative change as the reports print it: signed, one decimal.
    A change that rounds to zero prints unsigned, so -0.02% does not
    read as a loss.

    >>> signed_percent(0.0234), signed_percent(-0.016), signed_percent(-0.0002)
    ('+2.3%', '-1.6%', '0.0%')
    """
    text = f"{change:+.1%}"
    return "0.0%" if text in ("+0.0%", "-0.0%") else text


def report_stem(
    directory: str, kind: str, *parts: str, split: str = DEFAULT_SPLIT
) -> str:
    """A report's path without its suffix; makes the folder.

    Args:
        directory: the report folder (e.g. ``--report-dir``).
        kind: the report's kind, the script's name, e.g. ``"seed_spread"``.
        *parts: what the report is of, e.g. the data and the encoder.
        split: the run's split, named last only when it is not the
            default (RecBole's), so that default runs keep short names.

    Returns:
        ``<directory>/<kind>[-<part>...][-<split>]``.
    """
    os.makedirs(directory, exist_ok=True)
    if split != DEFAULT_SPLIT:
        parts = (*parts, split)
    return os.path.join(directory, "-".join([kind, *parts]))


def write_report(
    stem: str,
    text: str,
    numbers: object = None,
    chart: Callable[[str], object] | None = None,
) -> dict[str, str]:
    """Writes a report's files, ``<stem>.md``, ``.json`` and ``.png``.

    Args:
        stem: the path without a suffix (``report_stem``); its folder is
            made if needed.
        text: the markdown report, written ending in one newline.
        numbers: the results behind the report, written as JSON (indent
            2) when not ``None``.
        chart: draws the chart to the path it is given (``<stem>.png``);
            none when ``None``.

    Returns:
        ``{"md": path}``, with ``"json"`` and ``"png"`` for the files
        written.
    """
    os.makedirs(os.path.dirname(stem) or ".", exist_ok=True)
    paths = {"md": stem + ".md"}
    with open(paths["md"], "w") as handle:
        handle.write(text if text.endswith("\n") else text + "\n")
    if numbers is not None:
        paths["json"] = stem + ".json"
        with open(paths["json"], "w") as handle:
            json.dump(numbers, handle, indent=2)
    if chart is not None:
        paths["png"] = stem + ".png"
        chart(paths["png"])
    return paths


# ------------------------------------------------------------ child processes

#: ``--optimizer`` choices of the scale scripts and the learning rate each
#: trains with (Adagrad's: TFRS's retrieval examples').
LEARNING_RATES = {"adagrad": 0.1, "adam": 1e-3}


def add_optimizer_option(parser: argparse.ArgumentParser, default: str) -> None:
    """``--optimizer``: the runs' optimizer, each at its learning rate."""
    parser.add_argument(
        "--optimizer",
        choices=tuple(LEARNING_RATES),
        default=default,
        help="the runs' --optimizer (Adam's update is O(items) per step; "
        "learning rates: "
        + ", ".join(f"{k} {v:g}" for k, v in LEARNING_RATES.items())
        + f"). Default: {default}",
    )


def cli(*arguments: str) -> list[str]:
    """The argv of ``tfrec-tricks ARGUMENTS`` under this interpreter."""
    return [sys.executable, "-m", "tfrec_tricks.cli", *arguments]


def optimizer_flags(optimizer: str) -> list[str]:
    """``--optimizer NAME --learning-rate R`` (``LEARNING_RATES``)."""
    return [
        "--optimizer",
        optimizer,
        "--learning-rate",
        str(LEARNING_RATES[optimizer]),
    ]


def measured(command: list[str], log_path: str) -> dict:
    """Runs ``command`` in a fresh process: wall seconds and peak RSS.

    Returns:
        ``{"seconds", "cpu_seconds" (user + system, all threads),
        "peak_rss" (bytes), "returncode", "log"}``; the output goes to
        ``log_path``.
    """
    start = time.perf_counter()
    with open(log_path, "w") as log:
        process = subprocess.Popen(
            command, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT
        )
        # wait4: this child's own peak (RUSAGE_CHILDREN would give the
        # largest of every child waited for so far).
        _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    return {
        "seconds": time.perf_counter() - start,
        "cpu_seconds": usage.ru_utime + usage.ru_stime,
        "peak_rss": usage.ru_maxrss * 1024,
        "returncode": process.returncode,
        "log": log_path,
    }


def seed_notes(
    carried: list[str], missing: list[str], origin: str
) -> list[str]:
    """A report's lines naming the seeds carried over from its record and
    those not finished yet (empty when neither).

    Args:
        carried: what was carried over, e.g. ``["sum (seeds 1, 2)"]``.
        missing: what is not finished, in the same form.
        origin: where the carried seeds trained, e.g. ``"same settings"``.

    Returns:
        markdown lines, each note after an empty line.

    Example:

    >>> for line in seed_notes(["sum (seeds 1)"], [], "same"):
    ...     print(line)
    <BLANKLINE>
    Carried over from this report's earlier record (same): sum (seeds 1).
    """
    lines = []
    if carried:
        lines += [
            "",
            f"Carried over from this report's earlier record ({origin}): "
            + "; ".join(carried)
            + ".",
        ]
    if missing:
        lines += [
            "",
            "**Not finished yet** (the means are over the seeds that are): "
            + "; ".join(missing)
            + ".",
        ]
    return lines
