"""Rows of ``tfrec-tricks train`` command lines, shared by the scripts
that compare them (``state_of_the_art``, ``objective_speed``).

A row is ``--row LABEL FLAGS``: a label for the table and the flags of a
``tfrec-tricks train`` command line, parsed as ``train`` parses them (a
recipe included). The script owns the seed and the runs' folder.
"""

import argparse
import dataclasses
import re
import shlex

from tfrec_tricks.cli import parser as cli_parser
from tfrec_tricks.training.train_config import TrainConfig


def add_row_option(parser: argparse.ArgumentParser, note: str = "") -> None:
    """Adds ``--row LABEL FLAGS`` (repeatable, required).

    Args:
        parser: the script's parser.
        note: a sentence appended to the help, e.g. which row is the
            reference.
    """
    parser.add_argument(
        "--row",
        nargs=2,
        action="append",
        required=True,
        metavar=("LABEL", "FLAGS"),
        help="a row: its label and its `tfrec-tricks train` flags (one "
        "string; --seed and --output-dir are the script's). "
        f"{note}{' ' if note else ''}Repeat for more rows.",
    )


def row_configs(
    label: str, flags: str, seeds: list, args: argparse.Namespace
) -> list[TrainConfig]:
    """The ``TrainConfig`` of each seed of a row, as ``train`` parses it.

    Runs are named ``<--name>-s<seed>`` (the row's ``--name``, else its
    label made a file name), in ``args.output_dir``; ``args.data_path``,
    when set, replaces the data's folder.

    Raises:
        ValueError: flags ``tfrec-tricks train`` refuses, or a row that
            sets its own --seed or --output-dir.
    """
    argv = shlex.split(flags)
    for owned in ("--seed", "--output-dir"):
        if any(a == owned or a.startswith(owned + "=") for a in argv):
            raise ValueError(
                f"Row {label!r}: {owned} is the script's (--seeds, "
                f"--output-dir). Received: {flags!r}"
            )
    parser = cli_parser.build_parser()
    try:
        base = cli_parser.train_config(
            cli_parser.parse(parser, ["train", *argv])
        )
    except SystemExit:
        raise ValueError(
            f"Row {label!r}: `tfrec-tricks train` refuses these flags (its "
            f"message is above). Received: {flags!r}"
        ) from None
    name = base.name or re.sub(r"[^A-Za-z0-9.]+", "-", label).strip("-")
    overrides = {"output_dir": args.output_dir}
    if args.data_path is not None:
        overrides["data_path"] = args.data_path
    return [
        dataclasses.replace(
            base, **overrides, seed=seed, name=f"{name}-s{seed}"
        )
        for seed in seeds
    ]


def parse_rows(
    parser: argparse.ArgumentParser, args: argparse.Namespace, seeds: list
) -> dict:
    """Each row's ``row_configs``, by label; a bad row or a repeated label
    ends the script through ``parser.error`` (exit 2)."""
    labels = [label for label, _ in args.row]
    if len(set(labels)) != len(labels):
        parser.error(f"--row labels must differ. Received: {labels}")
    try:
        return {
            label: row_configs(label, flags, seeds, args)
            for label, flags in args.row
        }
    except ValueError as error:
        parser.error(str(error))
