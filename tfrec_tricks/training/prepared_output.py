"""``prepare``'s output folder: its kind and the refusals that come before
any data is read, without TensorFlow (the command line checks them before
it loads: ``cli.prepare.check``)."""

import os

from tfrec_tricks.data.prepared.format import PREPARED_KIND
from tfrec_tricks.output_folders import TargetKind, check_target
from tfrec_tricks.training.run_inputs import input_paths
from tfrec_tricks.training.train_config import TrainConfig

PREPARED_DATASET = TargetKind(PREPARED_KIND, "--output")


def check_prepared_output(
    output: str, config: TrainConfig, overwrite: bool = False
) -> None:
    """Refuses an ``output`` that ``prepare_dataset`` may not write for
    ``config``: one of its inputs, or a folder of someone else's
    (``output_folders.check_target``), or any existing folder without
    ``overwrite`` (``refuse_existing``).

    Raises:
        OutputError, TargetBusyError: as ``check_target``.
        FileExistsError: ``output`` exists and not ``overwrite``.
    """
    check_target(output, PREPARED_DATASET, input_paths(config))
    refuse_existing(output, overwrite)


def refuse_existing(output: str, overwrite: bool) -> None:
    """Refuses an existing ``output`` unless ``overwrite``.

    >>> refuse_existing(".", overwrite=False)
    Traceback (most recent call last):
    ...
    FileExistsError: '.' already exists; pass --overwrite to replace it.
    """
    if os.path.exists(output) and not overwrite:
        raise FileExistsError(
            f"{output!r} already exists; pass --overwrite to replace it."
        )
