"""The README's Python examples run as written."""

import pathlib
import re
import subprocess
import sys

README = pathlib.Path(__file__).resolve().parents[1] / "README.md"


def test_readme_python_blocks_run(tmp_path):
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
    assert blocks, "README has no python example"
    for number, code in enumerate(blocks):
        script = tmp_path / f"block_{number}.py"
        script.write_text(code)
        result = subprocess.run(
            [sys.executable, str(script)],
            capture_output=True,
            text=True,
            cwd=tmp_path,
        )
        assert result.returncode == 0, (
            f"README python block {number} failed:\n{result.stderr[-3000:]}"
        )


def test_readme_first_section_has_the_two_commands():
    text = README.read_text()
    quick_start = text.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    commands = re.findall(r"```bash\n(.*?)```", quick_start, re.S)
    assert [c.strip() for c in commands] == [
        "pip install . && tfrec-tricks train",
        'pip install ".[test]" && pytest && TF_USE_LEGACY_KERAS=0 pytest '
        "tests/layers tests/test_doctests.py",
    ]
