"""The temporary folders a Beam run leaves, removed after it.

Beam 2.77's DirectRunner first tries the Prism runner: it stages the
pipeline (two ``tmp*`` folders and ``beam-requirements-cache``) and starts
a job server, which makes a folder ``beam-temp*``, in the temporary
directory, then fetches the Prism binary. Where that fails (a machine
offline) the runner falls back to its in-process runner and the empty
folders stay behind, at every run, finished or interrupted. A job server
that did start removes its folder itself, when the process exits.

``BeamTemporaryDirectory`` gives a run a temporary directory of its own
and, after the run, removes the empty folders found there, then the
directory if it is empty. Nothing else is removed: a file another thread
of the process made there meanwhile stays, and so does the folder of a
job server that serves the process until it exits.

Example:

>>> import tempfile
>>> with BeamTemporaryDirectory() as temporary:
...     leftover = tempfile.mkdtemp(prefix="beam-temp")
...     temporary.finished_here()
>>> os.path.dirname(leftover) == temporary.path
True
>>> os.path.exists(leftover), os.path.exists(temporary.path)
(False, False)
"""

import atexit
import contextlib
import functools
import os
import tempfile

# The folder made for a run.
PRIVATE_PREFIX = "tfrec-tricks-beam-"


class BeamTemporaryDirectory:
    """``tempfile``'s directory during a Beam run, cleared after it.

    A context manager around the run. When the block ends after
    ``finished_here`` (the pipeline ran in this process and no job server
    outlives it), the empty folders Beam left are removed then; otherwise
    (an interrupted or failed run, or a job server that serves the
    process) when the process exits, after Beam has stopped its job
    servers.

    Attributes:
        path: str or None. The run's temporary directory, once entered.
    """

    def __init__(self) -> None:
        self.path: str | None = None
        self._previous: str | None = None
        self._finished = False
        self._at_exit = None

    def __enter__(self) -> "BeamTemporaryDirectory":
        self._previous = tempfile.tempdir
        self.path = tempfile.mkdtemp(prefix=PRIVATE_PREFIX)
        # Registered before the run: exit handlers run last first, so this
        # one runs after those of the job servers the run starts.
        self._at_exit = functools.partial(remove_leftovers, self.path)
        atexit.register(self._at_exit)
        tempfile.tempdir = self.path
        return self

    def finished_here(self) -> None:
        """Marks the run finished in this process: clear at the block's
        end."""
        self._finished = True

    def __exit__(self, *raised) -> None:
        tempfile.tempdir = self._previous
        if self._finished and remove_leftovers(self.path):
            atexit.unregister(self._at_exit)


def remove_leftovers(folder: str) -> bool:
    """Removes the empty folders in ``folder`` (a run's own temporary
    directory: Beam made them), then ``folder`` if it is empty.

    Returns:
        bool. Whether ``folder`` is gone.
    """
    with contextlib.suppress(OSError):
        for name in os.listdir(folder):
            # rmdir removes a folder only when empty.
            with contextlib.suppress(OSError):
                os.rmdir(os.path.join(folder, name))
    try:
        os.rmdir(folder)
    except FileNotFoundError:
        return True
    except OSError:
        return False
    return True
