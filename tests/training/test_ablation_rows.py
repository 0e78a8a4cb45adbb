"""The ablation's rows and report folder
(``tfrec_tricks.training.ablation_rows``), read without TensorFlow."""

import pytest

from tfrec_tricks.errors import OutputError
from tfrec_tricks.training.ablation_rows import (
    PAPER_ROWS,
    ROWS,
    check_report_dir,
)


def test_the_paper_rows_are_rows():
    assert set(PAPER_ROWS) <= set(ROWS) and len(PAPER_ROWS) == 9


def test_a_report_folder_that_is_an_input_is_refused(tmp_path):
    data = tmp_path / "clicks.tsv"
    data.write_text("")
    with pytest.raises(OutputError, match="is an input of this command"):
        check_report_dir(str(data), [str(data)])
    check_report_dir(str(tmp_path / "report"), [str(data)])
