"""The Python examples of the README and of docs/*.md run as written, and the
relative links of every Markdown page lead somewhere."""

import os
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
            # As from the clone's root: pages may use the studies of
            # benchmarks/, which are not installed. As from a user's shell:
            # no Keras chosen (the test session's choice is conftest's).
            env={
                **{
                    name: value
                    for name, value in os.environ.items()
                    if name != "TF_USE_LEGACY_KERAS"
                },
                "PYTHONPATH": str(ROOT),
            },
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
        "-n 2",
    ]


def test_ci_and_the_tests_readme_run_the_keras_3_tests_as_the_readme():
    # One command everywhere; which tests it collects is
    # tests/keras_env.py's list alone (tests/test_keras_env.py).
    ci = (ROOT / ".ci" / "run").read_text()
    assert (
        "TF_USE_LEGACY_KERAS=0 run_pytest -n 2 -q -p no:cacheprovider tests\n"
        in ci
    )
    tests_readme = (ROOT / "tests" / "README.md").read_text()
    assert "\nTF_USE_LEGACY_KERAS=0 pytest -n 2   " in tests_readme
    for text in (ci, tests_readme, README.read_text()):
        assert "test_keras3_retrieval_model.py" not in text  # no copy


def test_readme_layer_example_is_on_the_first_screen():
    lines = README.read_text().splitlines()
    first_python = lines.index("```python")
    assert first_python < 60, f"first python block at line {first_python + 1}"
    assert len(lines) <= 300, f"README has {len(lines)} lines"


def markdown_pages() -> list[pathlib.Path]:
    # The pages the repository ships, not the run folders a user trained.
    folders = ("benchmarks", "docs", "saved_models", "tests")
    pages = [README] + [
        page for f in folders for page in (ROOT / f).rglob("*.md")
    ]
    return sorted(pages)


def without_code_blocks(text: str) -> str:
    return re.sub(r"```.*?```", "", text, flags=re.S)


def heading_anchor(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    text = re.sub(r"[^\w\- ]", "", text.strip().lower())
    return text.replace(" ", "-")


def page_anchors(page: pathlib.Path) -> set[str]:
    text = without_code_blocks(page.read_text())
    anchors = set(re.findall(r'<a id="([^"]+)"', text))
    counts: dict[str, int] = {}
    for heading in re.findall(r"^#+ (.*)$", text, flags=re.M):
        anchor = heading_anchor(heading)
        # GitHub numbers a repeated heading's anchor: name, name-1, name-2.
        count = counts.get(anchor, 0)
        counts[anchor] = count + 1
        anchors.add(anchor if count == 0 else f"{anchor}-{count}")
    return anchors


def broken_links(page: pathlib.Path) -> list[str]:
    broken = []
    for target in re.findall(
        r"\]\(([^)\s]+)\)", without_code_blocks(page.read_text())
    ):
        if re.match(r"[a-z]+:", target):
            continue
        path, _, fragment = target.partition("#")
        linked = (page.parent / path) if path else page
        if not linked.exists():
            broken.append(f"{target} (no such file)")
        elif (
            fragment
            and linked.suffix == ".md"
            and fragment not in page_anchors(linked)
        ):
            broken.append(f"{target} (no such heading)")
    return broken


def test_the_anchor_of_a_heading_is_githubs():
    assert heading_anchor("On top of the recipe: the toolkit's techniques") == (
        "on-top-of-the-recipe-the-toolkits-techniques"
    )
    assert (
        heading_anchor("`--head auto` and [CPR](x.md)") == "--head-auto-and-cpr"
    )


def test_a_link_to_a_missing_page_or_heading_is_found(tmp_path):
    (tmp_path / "a.md").write_text("# Title\n\n## Two words\n")
    page = tmp_path / "b.md"
    page.write_text(
        "[ok](a.md#two-words) [gone](c.md) [typo](a.md#two-word) [web](https://x.org)"
    )
    assert broken_links(page) == [
        "c.md (no such file)",
        "a.md#two-word (no such heading)",
    ]


def test_every_relative_link_of_the_markdown_pages_resolves():
    pages = markdown_pages()
    assert README in pages
    broken = {
        str(page.relative_to(ROOT)): links
        for page in pages
        if (links := broken_links(page))
    }
    assert not broken, f"links that lead nowhere: {broken}"
