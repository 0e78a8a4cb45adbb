"""``prepare``'s output folder (``tfrec_tricks.training.prepared_output``):
refused before any data is read."""

import pytest

from tests.run_helpers import tiny_config
from tfrec_tricks.errors import OutputError
from tfrec_tricks.training.prepared_output import check_prepared_output


def test_an_input_or_an_existing_folder_is_refused(tmp_path):
    data = tmp_path / "clicks.tsv"
    data.write_text("SessionId\tItemId\tTime\ns1\ti1\t1\n")
    config = tiny_config(tmp_path, data="file", data_path=str(data))
    with pytest.raises(OutputError, match="is an input of this command"):
        check_prepared_output(str(data), config)
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileExistsError, match="pass --overwrite"):
        check_prepared_output(str(tmp_path / "empty"), config)
    check_prepared_output(str(tmp_path / "empty"), config, overwrite=True)
    check_prepared_output(str(tmp_path / "new"), config)
