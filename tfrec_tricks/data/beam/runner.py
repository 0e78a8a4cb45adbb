"""Running a Beam pipeline (``prepare`` and ``recommend --engine beam``),
and bringing a worker's DataError, or an interruption, back as itself.

A ``DataError`` raised on a worker crosses the runner wrapped in its
traceback: ``worker_data_error`` marks its message, and ``run_pipeline``
finds the marked message again and raises it as a ``DataError``.

A Ctrl-C (or the command line's SIGTERM and SIGHUP, ``cli.Signalled``)
lands in whatever the main thread runs, on the DirectRunner often a DoFn;
Beam then logs it with its traceback and raises a ``RuntimeError``
(``KeyboardInterrupt [while running 'Rank']``). ``run_pipeline`` drops
the record and raises the ``KeyboardInterrupt`` itself, so the command
line ends as it does anywhere else: one line, exit code 130 (143, 129).
Beam's temporary folders of the run are removed
(``beam.temporary_files``).

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

from tfrec_tricks.data.beam.temporary_files import BeamTemporaryDirectory
from tfrec_tricks.errors import DataError, in_chain

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


class _QuietWorkerErrors(logging.Filter):
    """Drops Beam's log record (with a traceback) of a worker's DataError
    or of an interruption: ``run_pipeline`` raises them again, as the
    message the user reads, or as the interruption."""

    def filter(self, record: logging.LogRecord) -> bool:
        if _ERROR_OPEN in record.getMessage():
            return False
        raised = record.exc_info[1] if record.exc_info else None
        return in_chain(raised, KeyboardInterrupt) is None


def run_pipeline(pipeline: beam.Pipeline) -> None:
    """Runs ``pipeline``; a worker's DataError or an interruption comes
    back as itself, and Beam's temporary folders of the run are removed
    (``BeamTemporaryDirectory``).

    Raises:
        KeyboardInterrupt: Ctrl-C (or ``cli.Signalled``) during the run,
            wherever Beam wrapped it.
        DataError: a worker raised a ``worker_data_error``.
        RuntimeError: the pipeline ended in another state than DONE.
    """
    quiet = _QuietWorkerErrors()
    logging.getLogger(_DOFN_ERROR_LOGGER).addFilter(quiet)
    try:
        with BeamTemporaryDirectory() as temporary:
            result = pipeline.run()
            state = result.wait_until_finish()
            if not _served_by_a_job_server(result):
                temporary.finished_here()
    except Exception as error:
        interrupt = in_chain(error, KeyboardInterrupt)
        if interrupt is not None:
            raise interrupt from None
        message = marked_message(error)
        if message is None:
            raise
        raise DataError(message) from None
    finally:
        logging.getLogger(_DOFN_ERROR_LOGGER).removeFilter(quiet)
    if state is not None and state != PipelineState.DONE:
        raise RuntimeError(f"The Beam pipeline ended in state {state}.")


def _served_by_a_job_server(result: object) -> bool:
    """Whether a job service (Prism, Flink, ...) ran the pipeline: the
    DirectRunner's Prism job server then serves the process until it
    exits, its folder with it."""
    from apache_beam.runners.portability.portable_runner import (
        PipelineResult,
    )

    return isinstance(result, PipelineResult)
