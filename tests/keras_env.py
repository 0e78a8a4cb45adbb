"""Which Keras the tests run under: tf-keras unless the run asks for
Keras 3 (tests/conftest.py sets the default), and which tests run under
Keras 3."""

import os
import pathlib

#: Whether this run asked for Keras 3 (``TF_USE_LEGACY_KERAS=0``).
KERAS3 = os.environ.get("TF_USE_LEGACY_KERAS", "1").lower() in (
    "0",
    "false",
    "no",
    "off",
)

#: The tests written for either Keras, relative to the repository root.
#: Under Keras 3 (``TF_USE_LEGACY_KERAS=0 pytest``) only these are
#: collected (``tests/conftest.py``); the others need TFRS, which imports
#: only under tf-keras. A test file named on the command line is collected
#: as asked.
KERAS3_TEST_PATHS = (
    "tests/layers",
    "tests/heads",
    "tests/features",
    "tests/callbacks",
    "tests/models",
    "tests/objectives",
    "tests/test_doctests.py",
    "tests/training/test_run_keras.py",
    "tests/training/test_multi_worker.py",
    "tests/training/test_ablation_keras.py",
    "tests/test_bad_input_crashes.py",
    "tests/tuning/test_keras_tuner_binding.py",
    "tests/tuning/test_search_keras.py",
    "tests/export/test_saved_model_writer.py",
    "tests/export/test_onnx_export.py",
    "tests/test_recommender_keras.py",
)


def runs_under_keras3(path: pathlib.Path, root: pathlib.Path) -> bool:
    """Whether ``path`` (a test file or a folder) is one of
    ``KERAS3_TEST_PATHS``, inside one, or a folder that holds one.

    Args:
        path: pathlib.Path. What pytest is about to collect.
        root: pathlib.Path. The repository root.

    Returns:
        bool. True for a path to collect under Keras 3.
    """
    try:
        relative = pathlib.PurePosixPath(
            path.resolve().relative_to(root.resolve()).as_posix()
        )
    except ValueError:  # outside the repository: not ours to filter
        return True
    return any(
        relative == listed
        or listed in relative.parents  # inside a listed folder
        or relative in listed.parents  # a folder on the way to one
        for listed in map(pathlib.PurePosixPath, KERAS3_TEST_PATHS)
    )
