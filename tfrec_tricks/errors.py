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
