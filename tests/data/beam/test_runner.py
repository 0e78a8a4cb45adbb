"""A worker's DataError, or an interruption, reaches the user as itself;
the default runner; Beam's temporary folders of a run are removed."""

import logging
import os
import signal
import tempfile

import apache_beam as beam
import pytest
from apache_beam.options.pipeline_options import StandardOptions

from tfrec_tricks.cli import Signalled
from tfrec_tricks.data.beam.runner import (
    DEFAULT_RUNNER,
    marked_message,
    pipeline_options,
    run_pipeline,
    worker_data_error,
)
from tfrec_tricks.errors import DataError


def test_runner_defaults_to_the_direct_runner():
    runner = pipeline_options(None).view_as(StandardOptions).runner
    assert runner == DEFAULT_RUNNER
    options = pipeline_options(["--runner=FlinkRunner"])
    assert options.view_as(StandardOptions).runner == "FlinkRunner"


def test_marked_message_is_found_in_the_chain():
    try:
        try:
            raise worker_data_error(DataError("a.tsv:3: bad\nline"))
        except DataError as error:
            raise RuntimeError("while running Read") from error
    except RuntimeError as wrapped:
        assert marked_message(wrapped) == "a.tsv:3: bad\nline"
    assert marked_message(RuntimeError("other")) is None


def _fail(_):
    raise worker_data_error(DataError("a.tsv:3: expected 3 fields"))


@pytest.mark.slow
def test_a_worker_data_error_is_raised_as_itself(caplog):
    pipeline = beam.Pipeline(options=pipeline_options(None))
    _ = pipeline | beam.Create([1]) | beam.Map(_fail)
    with caplog.at_level(logging.ERROR), pytest.raises(DataError) as raised:
        run_pipeline(pipeline)
    assert str(raised.value) == "a.tsv:3: expected 3 fields"
    # Beam's own log record of it, with a traceback, is dropped.
    assert "tfrec_tricks.DataError" not in caplog.text


@pytest.mark.slow
def test_other_errors_pass_unchanged():
    pipeline = beam.Pipeline(options=pipeline_options(None))
    _ = pipeline | beam.Create([1]) | beam.Map(lambda _: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        run_pipeline(pipeline)


def _interrupt(_):
    # What the command line's SIGTERM handler raises, in the main thread
    # that runs the DoFn.
    raise Signalled(signal.SIGTERM)


@pytest.mark.slow
def test_an_interruption_in_a_dofn_is_raised_as_itself(caplog):
    pipeline = beam.Pipeline(options=pipeline_options(None))
    _ = pipeline | beam.Create([1]) | beam.Map(_interrupt)
    with (
        caplog.at_level(logging.ERROR),
        pytest.raises(KeyboardInterrupt) as raised,
    ):
        run_pipeline(pipeline)
    # Not Beam's RuntimeError("... [while running 'Map(_interrupt)']"):
    # the command line ends with its one line and exit code 143.
    assert type(raised.value) is Signalled
    assert raised.value.signum == signal.SIGTERM
    assert "while running" not in caplog.text
    assert "Traceback" not in caplog.text


@pytest.mark.slow
def test_beams_temporary_folders_of_a_run_are_removed(tmp_path, monkeypatch):
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    # No Prism binary: the DirectRunner's Prism attempt fails as it does
    # offline, wherever the test runs, and leaves its folders behind.
    missing = f"--prism_location={tmp_path / 'no-prism'}"
    pipeline = beam.Pipeline(options=pipeline_options([missing]))
    _ = pipeline | beam.Create([1, 2]) | beam.Map(lambda x: x + 1)
    run_pipeline(pipeline)
    assert os.listdir(folder) == []
    assert tempfile.gettempdir() == str(folder)
