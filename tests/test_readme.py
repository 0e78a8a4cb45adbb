"""The Python examples of the README and of docs/*.md run as written."""

import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = sorted((ROOT / "docs").glob("*.md"))


def python_blocks(path: pathlib.Path) -> list[str]:
    return re.findall(r"```python\n(.*?)```", path.read_text(), re.S)


def run_blocks(path: pathlib.Path, tmp_path: pathlib.Path) -> None:
    for number, code in enumerate(python_blocks(path)):
        script = tmp_path / f"block_{number}.py"
        script.write_text(code)
        result = subprocess.run(
            [sys.executable, str(script)],
            capture_output=True,
            text=True,
            cwd=tmp_path,
        )
        assert result.returncode == 0, (
            f"{path.relative_to(ROOT)} python block {number} failed:\n"
            f"{result.stderr[-3000:]}"
        )


@pytest.mark.slow
def test_readme_python_blocks_run(tmp_path):
    assert python_blocks(README), "README has no python example"
    run_blocks(README, tmp_path)


def test_docs_exist():
    assert DOCS, "docs/ has no pages"


@pytest.mark.slow
@pytest.mark.parametrize("page", DOCS, ids=[page.name for page in DOCS])
def test_docs_python_blocks_run(page, tmp_path):
    run_blocks(page, tmp_path)


def test_readme_first_section_has_the_two_commands():
    text = README.read_text()
    quick_start = text.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    commands = re.findall(r"```bash\n(.*?)```", quick_start, re.S)
    assert [c.strip() for c in commands] == [
        "pip install . && tfrec-tricks train",
        'pip install ".[test]" && pytest -n 2 && TF_USE_LEGACY_KERAS=0 pytest '
        "tests/layers tests/test_doctests.py",
    ]


def test_readme_layer_example_is_on_the_first_screen():
    lines = README.read_text().splitlines()
    first_python = lines.index("```python")
    assert first_python < 60, f"first python block at line {first_python + 1}"
    assert len(lines) <= 300, f"README has {len(lines)} lines"
