"""RecBole atomic .item files: what is read, and every refusal."""

import gzip
import re

import pytest

from tfrec_tricks.data.item_features.item_file import (
    FEATURE_KINDS,
    ItemFeatureTable,
    read_item_features,
)
from tfrec_tricks.errors import DataError

HEADER = "item_id:token\tgenre:token\ttags:token_seq\tyear:float\temb:float_seq"


def write(tmp_path, text, name="items.item"):
    path = tmp_path / name
    path.write_bytes(text.encode("utf-8") if isinstance(text, str) else text)
    return str(path)


def refused(tmp_path, text, line):
    """The message of the DataError reading ``text`` gives, checked to
    start with ``file:line``."""
    path = write(tmp_path, text)
    with pytest.raises(DataError) as caught:
        read_item_features(path)
    message = str(caught.value)
    assert message.startswith(f"{path}:{line}: "), message
    return message


# --- what is read -----------------------------------------------------------


def test_every_kind_and_missing_values(tmp_path):
    path = write(
        tmp_path,
        f"{HEADER}\n"
        "i1\tDrama\tfunny  sad\t1995\t0.5 -1e3\n"
        "i2\t\t\t\t\n"
        "i3\tNew York\t   \t 7 \t\n",
    )
    table = read_item_features(path)
    assert table.kinds == {
        "genre": "token",
        "tags": "token_seq",
        "year": "float",
        "emb": "float_seq",
    }
    assert list(table.kinds) == ["genre", "tags", "year", "emb"]
    assert table.names() == ["genre", "tags", "year", "emb"]
    assert table.source == path
    assert table.rows == {
        "i1": {
            "genre": "Drama",
            "tags": ("funny", "sad"),
            "year": 1995.0,
            "emb": (0.5, -1000.0),
        },
        # Trailing empty fields: an item with a row and no values.
        "i2": {},
        # A token is kept as written; a token_seq of spaces is no value.
        "i3": {"genre": "New York", "year": 7.0},
    }
    assert list(table.rows) == ["i1", "i2", "i3"]
    assert type(table.rows["i1"]["year"]) is float


def test_item_id_anywhere_and_no_features(tmp_path):
    path = write(tmp_path, "title:token\titem_id:token\nA\t7\n")
    assert read_item_features(path).rows == {"7": {"title": "A"}}
    only = read_item_features(write(tmp_path, "item_id:token\n7\n8\n", "b"))
    assert only.kinds == {} and only.rows == {"7": {}, "8": {}}


def test_blank_lines_crlf_bom_and_gzip(tmp_path):
    text = "item_id:token\tyear:float\r\n1\t1990\r\n\r\n2\t1991\r\n\n\n"
    expected = {"1": {"year": 1990.0}, "2": {"year": 1991.0}}
    assert read_item_features(write(tmp_path, text)).rows == expected
    bom = write(tmp_path, b"\xef\xbb\xbf" + text.encode(), "bom.item")
    assert read_item_features(bom).rows == expected
    packed = write(tmp_path, gzip.compress(text.encode()), "g.item.gz")
    assert read_item_features(packed).rows == expected


def test_utf8_values_are_kept(tmp_path):
    path = write(tmp_path, "item_id:token\tgenre:token\ncafé_1\tÉté\n")
    assert read_item_features(path).rows == {"café_1": {"genre": "Été"}}


# --- refusals: the header ---------------------------------------------------


def test_no_item_id_column(tmp_path):
    message = refused(tmp_path, "id:token\tgenre:token\n1\ta\n", 1)
    assert "no item_id:token column" in message
    assert "id:token, genre:token" in message


def test_item_id_of_another_type(tmp_path):
    message = refused(tmp_path, "item_id:float\tgenre:token\n1\ta\n", 1)
    assert "no item_id:token column" in message
    assert "item_id:float" in message


def test_unknown_type(tmp_path):
    message = refused(tmp_path, "item_id:token\tgenre:category\n", 1)
    assert "'genre:category'" in message and "'category'" in message
    assert ", ".join(FEATURE_KINDS) in message


@pytest.mark.parametrize("field", ["genre", ":token"])
def test_header_field_without_type_or_name(tmp_path, field):
    message = refused(tmp_path, f"item_id:token\t{field}\n1\ta\n", 1)
    assert f"header field {field!r} is not name:type" in message


def test_duplicate_feature_name(tmp_path):
    message = refused(tmp_path, "item_id:token\tg:token\tg:float\n", 1)
    assert "names 'g' twice" in message


def test_empty_file(tmp_path):
    path = write(tmp_path, "")
    with pytest.raises(DataError, match=re.escape(f"{path}: the file is em")):
        read_item_features(path)


# --- refusals: the rows -----------------------------------------------------


def test_item_listed_twice_names_both_lines(tmp_path):
    path = write(tmp_path, "item_id:token\tg:token\n1\ta\n2\tb\n\n1\tc\n")
    with pytest.raises(DataError) as caught:
        read_item_features(path)
    message = str(caught.value)
    assert message.startswith(f"{path}:5: ")
    assert f"item_id '1' is listed twice, first at {path}:2" in message


@pytest.mark.parametrize(
    "line, received", [("1\tx", 2), ("1\tx\ty\tz", 4), ("1", 1)]
)
def test_wrong_number_of_fields(tmp_path, line, received):
    message = refused(tmp_path, f"item_id:token\ta:token\tb:token\n{line}\n", 2)
    assert "expected 3 tab-separated fields (item_id, a, b)" in message
    assert f"received {received}" in message
    assert repr(line) in message


@pytest.mark.parametrize(
    "kind, value, shown",
    [
        ("float", "19x5", "'19x5'"),
        ("float", '"3"', "'\"3\"'"),
        ("float_seq", "1.5 abc 2", "'abc'"),
        ("float_seq", "1,5", "'1,5'"),
    ],
)
def test_number_that_does_not_parse(tmp_path, kind, value, shown):
    text = f"item_id:token\tscore:{kind}\n1\t2\n2\t{value}\n"
    message = refused(tmp_path, text, 3)
    assert f"column 'score': {shown} is not a number" in message


@pytest.mark.parametrize(
    "kind, value, shown",
    [
        ("float", "nan", "'nan'"),
        ("float", "inf", "'inf'"),
        ("float", "-Infinity", "'-Infinity'"),
        ("float_seq", "1 NaN", "'NaN'"),
    ],
)
def test_nan_and_inf_are_refused(tmp_path, kind, value, shown):
    message = refused(tmp_path, f"item_id:token\tscore:{kind}\n1\t{value}\n", 2)
    assert f"column 'score': {shown} is not a finite number" in message


def test_number_beyond_float32(tmp_path):
    message = refused(tmp_path, "item_id:token\tscore:float\n1\t1e39\n", 2)
    assert "column 'score': '1e39' does not fit in float32" in message


@pytest.mark.parametrize("item", ["", " "])
def test_empty_item_id(tmp_path, item):
    message = refused(tmp_path, f"item_id:token\tg:token\n{item}\ta\n", 2)
    assert "the item_id is empty" in message


def test_padding_item_id(tmp_path):
    message = refused(tmp_path, "item_id:token\tg:token\n[PAD]\ta\n", 2)
    assert "'[PAD]' is the reserved padding token" in message


@pytest.mark.parametrize(
    "text, line, fragment",
    [
        # As a CSV tool writes ids: the interaction files' rule and words.
        (
            'item_id:token\tg:token\ni1\ta\n"i2"\tb\n',
            3,
            "the item_id '\"i2\"' is in quotes; fields are read as written, "
            "without CSV quoting: remove the quotes",
        ),
        (
            '"item_id:token"\t"g:token"\n"i1"\t"a"\n',
            1,
            "header field '\"item_id:token\"' is in quotes; fields are read "
            "as written",
        ),
        (
            'item_id:token\tyear:float\ni1\t"1995"\n',
            2,
            "column 'year': '\"1995\"' is not a number (fields are read as "
            "written, without CSV quoting: remove the quotes)",
        ),
    ],
    ids=["item-id", "header", "number"],
)
def test_quoted_fields_are_refused(tmp_path, text, line, fragment):
    assert fragment in refused(tmp_path, text, line)


def test_quoted_token_values_are_kept_as_interaction_files_keep_them(
    tmp_path,
):
    table = read_item_features(
        write(tmp_path, 'item_id:token\tg:token\ni1\t"a b"\n')
    )
    assert table.rows == {"i1": {"g": '"a b"'}}


def test_a_header_without_rows_warns_naming_the_file(tmp_path):
    path = write(tmp_path, "item_id:token\tg:token\n\n")
    with pytest.warns(UserWarning) as warned:
        table = read_item_features(path)
    assert [str(w.message) for w in warned] == [
        f"{path} holds a header and no item rows: no item has attributes "
        "from it"
    ]
    assert table.rows == {} and table.kinds == {"g": "token"}


def test_not_utf8_names_the_line(tmp_path):
    text = "item_id:token\tg:token\n1\ta\n2\tcaf\xe9\n".encode("latin-1")
    message = refused(tmp_path, text, 3)
    assert "not valid UTF-8 at byte offset 5 of the line (0xe9)" in message
    assert "ISO-8859-1" in message and "iconv -f latin1 -t utf-8" in message


def test_missing_file_and_folder(tmp_path):
    missing = str(tmp_path / "nope.item")
    with pytest.raises(DataError, match=re.escape(repr(missing))) as error:
        read_item_features(missing)
    # Which input is missing: not the interaction file.
    assert "Item features file (.item) not found" in str(error.value)
    with pytest.raises(DataError, match="is a directory"):
        read_item_features(str(tmp_path))


# --- select -----------------------------------------------------------------


@pytest.fixture
def table():
    return ItemFeatureTable(
        kinds={
            "movie_title": "token_seq",
            "release_year": "token",
            "class": "token_seq",
        },
        rows={
            "1": {"movie_title": ("Toy", "Story"), "class": ("Comedy",)},
            "2": {"release_year": "1995"},
        },
        source="ml-100k.item",
    )


def test_select_keeps_file_order_and_every_row(table):
    kept = table.select(["class", "movie_title"])
    assert kept.kinds == {"movie_title": "token_seq", "class": "token_seq"}
    assert kept.rows == {
        "1": {"movie_title": ("Toy", "Story"), "class": ("Comedy",)},
        "2": {},
    }
    assert kept.source == table.source
    assert table.select("release_year").rows == {
        "1": {},
        "2": {"release_year": "1995"},
    }


@pytest.mark.parametrize("names", ["all", ["all"], ("all",)])
def test_select_all(table, names):
    assert table.select(names) == table


def test_select_unknown_name_lists_the_file_features(table):
    with pytest.raises(ValueError) as caught:
        table.select(["genre"])
    assert str(caught.value) == (
        "--features names 'genre' but ml-100k.item has: class, movie_title, "
        "release_year"
    )
    with pytest.raises(ValueError, match="names 'a', 'b' but"):
        table.select(["a", "class", "b"])


@pytest.mark.parametrize("names", [[], ["all", "class"]])
def test_select_refuses_nothing_and_all_with_names(table, names):
    with pytest.raises(ValueError, match=re.escape(f"names={names!r}")):
        table.select(names)


# --- the real file ----------------------------------------------------------


@pytest.mark.real_data
def test_ml_100k_item_file(shared_data):
    table = read_item_features(str(shared_data / "ml-100k" / "ml-100k.item"))
    assert len(table.rows) == 1_682
    assert table.kinds == {
        "movie_title": "token_seq",
        "release_year": "token",
        "class": "token_seq",
    }
    assert table.rows["1"] == {
        "movie_title": ("Toy", "Story"),
        "release_year": "1995",
        "class": ("Animation", "Children's", "Comedy"),
    }
    assert set(table.rows) == {str(k) for k in range(1, 1_683)}
    genres = {g for row in table.rows.values() for g in row["class"]}
    assert len(genres) == 19
