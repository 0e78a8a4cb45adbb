"""Id lists (``tfrec_tricks.recommendation.id_lists``): one raw id a line,
checked against what the run knows, refused by ``file:line``."""

import pytest

from tfrec_tricks.errors import DataError
from tfrec_tricks.recommendation.id_lists import (
    IdList,
    check_known,
    read_id_list,
    where,
)


def test_read_id_list_keeps_ids_as_written_with_their_lines(tmp_path):
    path = tmp_path / "users.txt"
    path.write_bytes(b"\xef\xbb\xbfu1\r\n\n  caf\xc3\xa9 7 \n\t\nu1\n#x\n[PAD]")
    ids = read_id_list(str(path))
    assert ids == ["u1", "café 7", "u1", "#x", "[PAD]"]
    assert ids.lines == [1, 3, 5, 6, 7]
    assert ids.source == str(path)
    assert where(ids, 1, "users") == f"{path}:3"


@pytest.mark.parametrize(
    "content, fragment",
    [
        (b"", "holds no id"),
        (b"\n  \n", "holds no id"),
        (b"u1\nu\xe92\n", ":2: not valid UTF-8"),
    ],
)
def test_read_id_list_refuses_files_without_ids(tmp_path, content, fragment):
    path = tmp_path / "ids.txt"
    path.write_bytes(content)
    with pytest.raises(DataError, match=fragment):
        read_id_list(str(path))


def test_read_id_list_refuses_a_folder_or_a_missing_file(tmp_path):
    with pytest.raises(DataError, match="is a folder"):
        read_id_list(str(tmp_path))
    with pytest.raises(DataError, match="Cannot read .*No such file"):
        read_id_list(str(tmp_path / "missing.txt"))


def test_id_list_needs_a_line_per_id():
    with pytest.raises(ValueError, match="one line number per id"):
        IdList(["a", "b"], "f.txt", [1])


def test_check_known_removes_repeats_in_order():
    known = {"a": 1, "b": 2, "c": 3}
    assert check_known(["c", "a", "c", "b"], known, "items", "item", "x") == [
        "c",
        "a",
        "b",
    ]
    assert check_known([], known, "items", "item", "x") == []


def test_check_known_names_the_unknown_id_by_file_and_line():
    ids = IdList(["i1", "i2", "nope"], "allowed.txt", [1, 2, 4])
    with pytest.raises(DataError) as error:
        check_known(ids, {"i1", "i2"}, "items", "item", "the catalogue")
    assert str(error.value) == (
        "allowed.txt:4: item 'nope' is not in the catalogue. Received: "
        "item 'nope'"
    )


def test_check_known_names_a_list_entry_by_index():
    with pytest.raises(DataError, match=r"^users\[1\]: user 'z' is not in"):
        check_known(["a", "z"], {"a"}, "users", "user", "the data")


def test_check_known_refuses_one_string_and_other_types():
    with pytest.raises(DataError, match="not one string"):
        check_known("abc", {"a"}, "users", "user", "the data")
    with pytest.raises(DataError, match=r"users\[0\]: .* must be a str"):
        check_known([7], {"7"}, "users", "user", "the data")
