"""Named data sources: the synthetic default, the real datasets, TFDS, files.

Real datasets are read from a folder laid out like ``../shared/data`` of the
development checkout (one sub-folder per dataset, the original file names).
Their licenses forbid redistribution, so nothing here downloads or ships
them: point ``data_path`` (CLI: ``--data-path``) or the environment variable
``TFREC_TRICKS_DATA`` at your copy.
"""

import dataclasses
import glob
import os

import numpy as np

from tfrec_tricks.data.sources import synthetic
from tfrec_tricks.data.sources.encoded_interactions import (
    DuplicateRows,
    read_encoded,
)
from tfrec_tricks.data.sources.interactions import Interactions
from tfrec_tricks.data.sources.loaders import (
    is_pipe,
    natural_sort_key,
    read_records,
)
from tfrec_tricks.data.sources.tfds_movielens import (
    TFDS_DATASETS,
    load_tfds_movielens,
)
from tfrec_tricks.errors import DataError

REAL_DATASETS = {
    # name: (files relative to the dataset folder, format)
    "ml-1m": (("ml-1m/ml-1m_seq_sasrec_format.txt",), "sasrec"),
    "ml-1m-timed": (("ml-1m/ratings_users1-2999.dat",), "grouplens"),
    "ml-100k": (("ml-100k/u.data",), "udata"),
    "yoochoose-100k": (
        (
            "yoochoose-100k/yoochoose-clicks-100k_train_full.txt",
            "yoochoose-100k/yoochoose-clicks-100k_test.txt",
        ),
        "sessions",
    ),
}
SOURCES = (
    "synthetic",
    *REAL_DATASETS,
    *(f"tfds:{n}" for n in TFDS_DATASETS),
    "file",
)
DATA_ENV = "TFREC_TRICKS_DATA"


@dataclasses.dataclass
class Source:
    """Loaded interactions plus an optional item graph over raw item ids,
    and the exact duplicate rows of interaction files (None: none)."""

    interactions: Interactions
    item_graph: np.ndarray | None = None  # [E, 2] raw item ids (str)
    duplicates: DuplicateRows | None = None


def default_data_path() -> str:
    return os.environ.get(DATA_ENV) or os.path.join("..", "shared", "data")


def load_source(
    name: str = "synthetic",
    data_path: str | None = None,
    file_format: str = "auto",
    synthetic_options: dict | None = None,
    tfds_data_dir: str | None = None,
    tfds_manual_dir: str | None = None,
    drop_duplicates: bool = True,
) -> Source:
    """Loads a data source by name.

    Args:
        name: str. One of ``SOURCES``: "synthetic" (built in), a real
            dataset ("ml-1m", "ml-1m-timed", "ml-100k", "yoochoose-100k"),
            "tfds:movielens/1m-ratings", "tfds:movielens/100k-ratings", or
            "file" (then ``data_path`` is the file).
        data_path: str. For real datasets, the folder holding them
            (defaults to $TFREC_TRICKS_DATA, else ../shared/data); for
            "file", the file.
        file_format: str. For "file": a format of ``loaders.FORMATS`` or
            "auto".
        synthetic_options: dict. Arguments of ``synthetic.generate``.
        tfds_data_dir: str. TFDS data directory.
        tfds_manual_dir: str. Folder with GroupLens' zip for TFDS.
        drop_duplicates: bool. Drop the rows of interaction files that
            repeat an earlier row exactly (``read_encoded``); they are
            counted in ``Source.duplicates`` either way. Defaults to True.
    """
    if name == "synthetic":
        data = synthetic.generate(**(synthetic_options or {}))
        graph = np.char.add("i", data.item_graph.astype(str))
        return Source(data.interactions, graph)
    if name.startswith("tfds:"):
        return Source(
            load_tfds_movielens(
                name[len("tfds:") :], tfds_data_dir, tfds_manual_dir
            )
        )
    paths, file_format = located_files(name, data_path, file_format)
    # The files are one table, read as ``prepare`` reads them.
    table = read_encoded(
        paths,
        file_format,
        source=data_path if name == "file" else name,
        drop_duplicates=drop_duplicates,
    )
    return Source(table.to_interactions(), duplicates=table.duplicates)


def check_source_headers(
    name: str, data_path: str | None = None, file_format: str = "auto"
) -> None:
    """Reads what ``load_source`` reads first, and no more: the files of a
    file-based source, each one opened and its header checked.

    A missing file, a directory, a file that is not UTF-8 text or a header
    without the needed columns is refused with the ``DataError`` that
    ``load_source`` would raise, in a fraction of a second: the command
    line checks this before TensorFlow loads. Synthetic and TFDS data are
    not files: nothing is checked.

    Raises:
        DataError: as ``load_source`` on the same arguments.

    Example:

    >>> try:
    ...     check_source_headers("file", "missing.inter")
    ... except DataError as error:
    ...     print(error)
    Data file not found. Received: path='missing.inter'
    """
    if name == "synthetic" or name.startswith("tfds:"):
        return
    paths, file_format = located_files(name, data_path, file_format)
    # As read_encoded does: every file's header, in order, before any row.
    # A format without a header (--format udata, sasrec) is opened when its
    # rows are read: its missing file is refused by load_source, later.
    for path in paths:
        read_records(path, file_format)


def source_files(
    name: str,
    data_path: str | None = None,
    tfds_manual_dir: str | None = None,
) -> list[str]:
    """The files ``load_source`` reads for a source (none for synthetic).

    A run directory records their sizes and hashes, so that a run resumes
    or is reused only on the data it started with. A TFDS ``data_dir``
    (a prepared dataset) is identified by its path in the run's config;
    the GroupLens zips of ``tfds_manual_dir`` are files.
    """
    if name == "file":
        return file_paths(data_path) if data_path else []
    if name.startswith("tfds:"):
        if not tfds_manual_dir or not os.path.isdir(tfds_manual_dir):
            return []
        return [
            os.path.join(tfds_manual_dir, entry)
            for entry in sorted(os.listdir(tfds_manual_dir))
            if entry.endswith(".zip")
        ]
    if name in REAL_DATASETS:
        folder = data_path or default_data_path()
        return [os.path.join(folder, f) for f in REAL_DATASETS[name][0]]
    return []


def resolved_path(path: str | None) -> str | None:
    """``path`` as one spelling of its file or folder: its real path.

    A run's fingerprint compares data paths resolved, so ``u.data``,
    ``./u.data``, ``/home/me/u.data`` and a symlink to it are one input,
    whatever the working directory. A glob resolves its folders. A pipe
    (``/dev/fd/63`` of ``<(...)``) stays as written: its real path names a
    pipe that is gone; its content identifies it.

    >>> resolved_path("/a/./b/../c.tsv")
    '/a/c.tsv'
    >>> resolved_path(None) is None
    True
    """
    if not path or is_pipe(path):
        return path
    return os.path.realpath(path)


def file_paths(pattern: str | None) -> list[str]:
    """The files of ``--data file --data-path PATTERN``, in order.

    ``PATTERN`` is a file or a glob of shards (``clicks-*.tsv``), whose
    matches are read as one table in natural order: runs of digits
    compare as numbers, so ``part-2`` comes before ``part-10``
    (``loaders.natural_sort_key``). A path that exists is that file, even
    when its name holds glob characters (``clicks[1].tsv``); a pipe
    (``<(zcat f.gz)``, a FIFO) is a file.
    """
    if not pattern:
        raise DataError("--data file needs --data-path FILE (or a glob).")
    # Literally first: a name with '[' or '*' would otherwise match
    # other files, or none (glob's [1] is a character class).
    if os.path.lexists(pattern) or not glob.has_magic(pattern):
        if os.path.isdir(pattern):
            raise DataError(
                f"--data-path {pattern!r} is a directory; --data file reads "
                f"a file or a glob of files, e.g. --data-path "
                f"'{os.path.join(pattern, '*.tsv')}'"
            )
        return [pattern]
    files = (p for p in glob.glob(pattern) if os.path.isfile(p))
    paths = sorted(files, key=natural_sort_key)
    if not paths:
        raise DataError(f"No files match --data-path {pattern!r}.")
    return paths


def located_files(
    name: str, data_path: str | None = None, file_format: str = "auto"
) -> tuple[list[str], str]:
    """The files and format of a file-based source (``file`` or a real one).

    Streaming engines (``read_encoded``, Apache Beam) read these files
    themselves; synthetic and TFDS data are made in memory.

    Raises:
        DataError: an unknown source, a source that is not files, or a
            real dataset whose files are missing.
    """
    if name == "file":
        return file_paths(data_path), file_format
    if name not in REAL_DATASETS:
        raise DataError(
            f"Unknown data source, or one that is not read from files. "
            f"Expected one of {list(SOURCES)}. Received: {name!r}"
        )
    files, real_format = REAL_DATASETS[name]
    folder = data_path or default_data_path()
    paths = [os.path.join(folder, f) for f in files]
    missing = [p for p in paths if not os.path.isfile(p)]
    if missing:
        raise DataError(
            f"Dataset {name!r} not found: missing {missing}. Point "
            f"--data-path (or ${DATA_ENV}) at the folder that holds "
            f"{sorted({f.split('/')[0] for f in files})}."
        )
    return paths, real_format
