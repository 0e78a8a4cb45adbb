"""Errors users see: each message names the problem and what was received."""


class DataError(ValueError):
    """A data file, data source or dataset that cannot be used as given."""


def malformed_line(
    path: str, line_number: int, line: str, why: str
) -> DataError:
    """A DataError naming the file, the 1-based line number and the line."""
    shown = line.rstrip("\n")
    if len(shown) > 80:
        shown = shown[:77] + "..."
    return DataError(f"{path}:{line_number}: {why}. Received line: {shown!r}")


class RunDirectoryError(ValueError):
    """A run directory that holds another run, or an unfinished or mixed one."""


class OutputError(ValueError):
    """An output that a command may not write: something that is not its
    own kind, one of its inputs, or a folder another process is writing."""


class TargetBusyError(OutputError):
    """An output folder that another live process holds the lock of."""


class TrainingFailedError(ValueError):
    """A training run that cannot go on (diverged, or out of memory): its
    run directory is recorded as failed, with this message as the reason."""


class TrainingDivergedError(TrainingFailedError):
    """A training loss that became NaN or infinite."""


class InsufficientMemoryError(ValueError):
    """A run that cannot fit in the memory available, refused before it
    starts (nothing written)."""
