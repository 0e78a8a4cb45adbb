"""The package's layout: a test file per module, and size bounds.

Every module of ``tfrec_tricks/`` with logic has its tests in
``tests/<same folder>/test_<module>.py`` (tests/README.md; another name
only where that basename is taken: ``OTHER_NAMES``); no module is
longer than ``MAX_MODULE_LINES``, no class than ``MAX_CLASS_LINES`` lines
of code (docstrings excluded), and ``SequentialRetrievalModel``'s module
stays within ``MAX_MODEL_LINES``.
"""

import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "tfrec_tricks"
TESTS = ROOT / "tests"

# Modules without logic (constants, re-exports): no test file of their own.
NO_LOGIC: dict[str, str] = {
    "tfrec_tricks/training/option_choices.py": "choices of options",
    "tfrec_tricks/heads/cpr/cpr_inputs.py": "a frozen dataclass of a call's "
    "tensors, exercised by every tests/heads/cpr file",
}
# Modules whose test file cannot be named test_<module>.py because another
# folder's test file has that name (no two test files share a basename:
# tests/ has no __init__.py): module -> its test file, in its folder.
OTHER_NAMES: dict[str, str] = {
    # tests/training/test_ablation.py tests tfrec_tricks/training/ablation.py.
    "tfrec_tricks/cli/ablation.py": "tests/cli/test_cli_ablation.py",
    # tests/models/test_config.py tests tfrec_tricks/models/config.py.
    "tfrec_tricks/data/beam/config.py": "tests/data/beam/test_beam_config.py",
}

MAX_MODULE_LINES = 800
MAX_CLASS_LINES = 500
MODEL_MODULE = "tfrec_tricks/models/sequential_retrieval_model.py"
MAX_MODEL_LINES = 400


def _modules():
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name not in ("__init__.py", "__main__.py"):
            yield path.relative_to(ROOT).as_posix(), path


def _line_count(path):
    return len(path.read_text(encoding="utf-8").splitlines())


def _docstring_lines(node):
    """Lines of the docstrings of ``node`` and of the functions and
    classes inside it."""
    lines = 0
    for inner in ast.walk(node):
        if not isinstance(
            inner, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
        ):
            continue
        body = inner.body
        if (
            body
            and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)
        ):
            lines += body[0].end_lineno - body[0].lineno + 1
    return lines


def class_code_lines(node):
    """A class's lines, its and its functions' docstrings excluded."""
    return node.end_lineno - node.lineno + 1 - _docstring_lines(node)


def _test_file(path):
    """Where the tests of the module at ``path`` are."""
    folder = TESTS / path.parent.relative_to(PACKAGE)
    return folder / f"test_{path.stem}.py"


def test_every_module_has_its_test_file():
    missing = []
    for name, path in _modules():
        if name in NO_LOGIC:
            continue
        expected = _test_file(path)
        if name in OTHER_NAMES:
            expected = ROOT / OTHER_NAMES[name]
        if not expected.exists():
            missing.append(f"{name} -> {expected.relative_to(ROOT)}")
    assert not missing, (
        "Modules without their test file (write it, or list the module in "
        f"NO_LOGIC with the reason): {missing}"
    )


def test_other_names_are_needed_and_in_the_modules_folder():
    for name, test_file in OTHER_NAMES.items():
        path = ROOT / name
        assert path.exists(), f"OTHER_NAMES: {name}: no such module"
        usual = _test_file(path)
        assert (ROOT / test_file).parent == usual.parent, test_file
        holders = [
            p for p in TESTS.rglob(usual.name) if p.parent != usual.parent
        ]
        assert holders, (
            f"OTHER_NAMES: no other folder has {usual.name}: name the tests "
            f"of {name} {usual.relative_to(ROOT)}"
        )


def test_no_two_test_files_share_a_basename():
    # tests/ has no __init__.py: pytest imports each test file by its
    # basename, and a second file of the same name fails to import.
    seen = {}
    for path in sorted(TESTS.rglob("test_*.py")):
        seen.setdefault(path.name, []).append(path.relative_to(ROOT))
    shared = {name: paths for name, paths in seen.items() if len(paths) > 1}
    assert not shared, f"Test files sharing a basename: {shared}"


def test_no_logic_entries_are_modules_without_a_test_file():
    for name, why in NO_LOGIC.items():
        path = ROOT / name
        assert path.exists() and why, f"NO_LOGIC: {name}: no such module"
        expected = (
            TESTS / path.parent.relative_to(PACKAGE) / f"test_{path.name}"
        )
        assert not expected.exists(), (
            f"NO_LOGIC lists {name}, which has {expected.relative_to(ROOT)}"
        )


def test_modules_are_at_most_800_lines():
    long = {
        name: _line_count(path)
        for name, path in _modules()
        if _line_count(path) > MAX_MODULE_LINES
    }
    assert not long, f"Modules above {MAX_MODULE_LINES} lines: {long}"


def test_classes_are_at_most_500_lines_of_code():
    long = []
    for name, path in _modules():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                lines = class_code_lines(node)
                if lines > MAX_CLASS_LINES:
                    long.append(f"{name}:{node.lineno} {node.name}: {lines}")
    assert not long, (
        f"Classes above {MAX_CLASS_LINES} lines of code (docstrings "
        f"excluded): {long}"
    )


def test_the_model_module_is_at_most_400_lines():
    lines = _line_count(ROOT / MODEL_MODULE)
    assert lines <= MAX_MODEL_LINES, (
        f"{MODEL_MODULE}: {lines} lines, above {MAX_MODEL_LINES}"
    )


def test_class_code_lines_leave_out_docstrings():
    tree = ast.parse(
        'class A:\n    """Doc\n    more."""\n\n    def f(self):\n'
        '        """One."""\n        return 1\n'
    )
    assert class_code_lines(tree.body[0]) == 7 - 2 - 1
