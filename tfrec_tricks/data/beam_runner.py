"""Running a Beam preparation's pipeline, and bringing a worker's
DataError back to the user as itself.

A ``DataError`` raised on a worker crosses the runner wrapped in its
traceback: ``worker_data_error`` marks its message, and ``run_pipeline``
finds the marked message again and raises it as a ``DataError``.

Example:

>>> error = worker_data_error(DataError("a.tsv:3: expected 3 fields"))
>>> marked_message(RuntimeError(f"while running Read: {error}"))
'a.tsv:3: expected 3 fields'
"""

import logging
import re
import traceback

import apache_beam as beam
from apache_beam.options.pipeline_options import (
    PipelineOptions,
    StandardOptions,
)
from apache_beam.runners.runner import PipelineState

from tfrec_tricks.errors import DataError

DEFAULT_RUNNER = "DirectRunner"

_ERROR_OPEN = "<<tfrec_tricks.DataError|"
_ERROR_CLOSE = "|tfrec_tricks.DataError>>"
_MARKED_ERROR = re.compile(
    re.escape(_ERROR_OPEN) + "(.*?)" + re.escape(_ERROR_CLOSE), re.DOTALL
)
# Where Beam logs the exception of a DoFn, before the runner re-raises it.
_DOFN_ERROR_LOGGER = "apache_beam.runners.common"


def pipeline_options(pipeline_args: list[str] | None) -> PipelineOptions:
    """The options of ``pipeline_args``; the runner defaults to
    ``DEFAULT_RUNNER``."""
    options = PipelineOptions(list(pipeline_args or []))
    standard = options.view_as(StandardOptions)
    standard.runner = standard.runner or DEFAULT_RUNNER
    return options


def worker_data_error(error: DataError) -> DataError:
    """``error`` with its message marked, to raise on a worker."""
    return DataError(f"{_ERROR_OPEN}{error}{_ERROR_CLOSE}")


def marked_message(error: BaseException) -> str | None:
    """The first marked DataError message in ``error`` or its chain."""
    text = "".join(traceback.format_exception(error))
    found = _MARKED_ERROR.search(text)
    return found.group(1) if found else None


class _QuietDataErrors(logging.Filter):
    """Drops Beam's log record (with a traceback) of a worker's DataError:
    ``run_pipeline`` raises it again, as the message the user reads."""

    def filter(self, record: logging.LogRecord) -> bool:
        return _ERROR_OPEN not in record.getMessage()


def run_pipeline(pipeline: beam.Pipeline) -> None:
    """Runs ``pipeline``; a worker's DataError comes back as itself.

    Raises:
        DataError: a worker raised a ``worker_data_error``.
        RuntimeError: the pipeline ended in another state than DONE.
    """
    quiet = _QuietDataErrors()
    logging.getLogger(_DOFN_ERROR_LOGGER).addFilter(quiet)
    try:
        state = pipeline.run().wait_until_finish()
    except Exception as error:
        message = marked_message(error)
        if message is None:
            raise
        raise DataError(message) from None
    finally:
        logging.getLogger(_DOFN_ERROR_LOGGER).removeFilter(quiet)
    if state is not None and state != PipelineState.DONE:
        raise RuntimeError(f"The Beam pipeline ended in state {state}.")
