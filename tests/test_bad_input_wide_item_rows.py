"""An item attribute row far wider than the rest, through the CLI (the
refusal in this process, ``run_cli_here``; the run that trains as a
``tfrec-tricks`` process).

Stored ragged, a wide row costs its own values (docs/side-information.md,
"Storage: ragged tables"): a row above ``MAX_ROW_VALUES`` (100,000 values)
is refused, exit 1 naming ``file:line``, the item and its count, with no
traceback and nothing written; a row far wider than the others (here
2,000 values against 2) is named in a warning and the run trains.
"""

import pytest

from tests.run_helpers import (
    assert_clean_error,
    run_cli,
    run_cli_here,
    snapshot,
)
from tests.test_bad_input_item_features import INTERACTIONS, ITEMS, TRAIN


def item_file(folder, widest):
    """``x.item``: each item 2 genres, ``i3`` (line 5) ``widest``."""
    lines = ["item_id:token\tgenre:token_seq"]
    for item in ITEMS:
        width = widest if item == "i3" else 2
        lines.append(f"{item}\t" + " ".join(f"g{k % 7}" for k in range(width)))
    (folder / "x.item").write_text("\n".join(lines) + "\n")
    (folder / "u.data").write_text(INTERACTIONS)


def test_a_row_above_the_cap_is_refused_naming_file_and_line(tmp_path):
    item_file(tmp_path, 100_001)
    before = snapshot(tmp_path)
    result = run_cli_here(*TRAIN, "--item-features", "x.item", cwd=tmp_path)
    assert_clean_error(
        result,
        "x.item:5: item 'i3' holds 100,001 values of 'genre'; an item holds "
        "at most 100,000 values of a feature (MAX_ROW_VALUES)",
    )
    assert not (tmp_path / "runs").exists()
    assert snapshot(tmp_path) == before


@pytest.mark.slow
def test_a_far_wider_row_is_warned_of_and_the_run_trains(tmp_path):
    item_file(tmp_path, 2_000)
    result = run_cli(*TRAIN, "--item-features", "x.item", cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    assert (
        "x.item:5: item 'i3' holds 2,000 values of 'genre', far more than "
        "the other items (median 2, 99th percentile 2)"
    ) in result.stderr
    assert "Traceback" not in result.stderr
    assert "Item feature genre: token_seq" in result.stdout
