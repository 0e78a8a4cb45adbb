"""The ``tfrec-tricks`` parser: one sub-command per module of this package."""

import argparse

from tfrec_tricks.cli import ablation, export, prepare, recommend, train, tune
from tfrec_tricks.cli.config_file import load_config_file
from tfrec_tricks.cli.options import add_field_arguments

# Re-exported: build_parser, parse, then train_config gives a TrainConfig.
from tfrec_tricks.cli.options import train_config as train_config
from tfrec_tricks.config_fields import field_default
from tfrec_tricks.errors import DataError
from tfrec_tricks.models.config import ModelConfig
from tfrec_tricks.training.recipes import RECIPES, recipe_options
from tfrec_tricks.training.train_config import TrainConfig

DESCRIPTION = """\
tfrec-tricks: sequential recommenders with TensorFlow Recommenders, and four
techniques that make them better (soft one-hot features, tied embeddings,
stochastic shared embeddings, Softmax-CPR).

Start with `tfrec-tricks train`: it trains GRU4Rec on the built-in synthetic
data (no download) and prints NDCG@10, HR@10 and MRR@10.
"""

COMMANDS = {
    "prepare": prepare,
    "train": train,
    "ablation": ablation,
    "export": export,
    "recommend": recommend,
    "tune": tune,
}


def add_config_arguments(
    parser: argparse.ArgumentParser, skip: tuple[str, ...] = ()
) -> None:
    """The data, training, model and output flags, from the config fields.

    Model flags default to unset (None): a ``--config`` file's values, then
    ``ModelConfig``'s defaults, fill what the command line leaves out.
    """
    groups = {}
    add_field_arguments(parser, TrainConfig, groups, skip=skip)
    add_field_arguments(parser, ModelConfig, groups, unset_defaults=True)
    parser.add_argument(
        "--config",
        metavar="FILE",
        help="JSON options, e.g. a run's config.json or the best "
        "configuration `tfrec-tricks tune` writes; flags given on the "
        "command line override it",
    )
    parser.add_argument(
        "--recipe",
        choices=sorted(RECIPES),
        help="a measured result's settings as defaults, which flags "
        "override (not with --config). "
        + "; ".join(
            f"{name}: {recipe['summary']}" for name, recipe in RECIPES.items()
        ),
    )
    groups["output"].add_argument(
        "--quiet",
        action="store_true",
        help="no progress bar, only the final table",
    )


def add_verbose_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--verbose",
        action="store_true",
        help="also show TensorFlow's own log lines (C++ start-up notices, "
        "warnings)",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tfrec-tricks",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    parser.command_parsers = {}
    for name, module in COMMANDS.items():
        sub = commands.add_parser(
            name,
            help=module.HELP,
            description=module.DESCRIPTION,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        if module.USES_CONFIG:
            add_config_arguments(sub, getattr(module, "SKIP_FIELDS", ()))
        module.add_arguments(sub)
        add_verbose_argument(sub)
        parser.command_parsers[name] = sub
    return parser


def parse(parser: argparse.ArgumentParser, argv) -> argparse.Namespace:
    """Parses ``argv``; --config FILE or --recipe NAME gives defaults.

    Flags given on the command line beat those defaults.

    ``prepare --engine beam`` and ``recommend --engine beam`` pass the
    arguments they do not know on to Beam as pipeline options
    (``args.pipeline_args``); every other command refuses them.
    """
    args, unknown = parser.parse_known_args(argv)
    if unknown and not (
        args.command in ("prepare", "recommend")
        and getattr(args, "engine", "") == "beam"
    ):
        parser.command_parsers.get(args.command, parser).error(
            f"unrecognized arguments: {' '.join(unknown)}"
        )
    args.pipeline_args = unknown
    args.config_model = {}
    config, recipe = (
        getattr(args, "config", None),
        getattr(args, "recipe", None),
    )
    if config and recipe:
        parser.command_parsers[args.command].error(
            "--recipe and --config both set the defaults: give one, and "
            f"flags for the rest. Received: --recipe {recipe} --config {config}"
        )
    if config or recipe:
        values = load_config_file(config) if config else recipe_options(recipe)
        source = config or f"--recipe {recipe}"
        _check_taken(args.command, values["train"], source, bool(config))
        parser.command_parsers[args.command].set_defaults(**values["train"])
        args = parser.parse_args(argv)
        args.config_model = values["model"]
        args.pipeline_args = []
    return args


def _check_taken(
    command: str, values: dict, source: str, is_file: bool = True
) -> None:
    """Refuses a file's or recipe's setting that ``command`` has no flag
    for (its ``SKIP_FIELDS``) unless it is the default: the command would
    drop it without a word.

    Raises:
        DataError: naming the source, the setting and its value.
    """
    skipped = getattr(COMMANDS[command], "SKIP_FIELDS", ())
    for name in skipped:
        if name in values and values[name] != field_default(TrainConfig, name):
            fix = "leave it out of the file"
            if not is_file:
                fix = "choose another recipe"
            raise DataError(
                f"{source}: tfrec-tricks {command} has no --"
                f"{name.replace('_', '-')} (see {command} --help); {fix}. "
                f"Received: {name}={values[name]!r}"
            )
