"""Loaders: each file format, auto-detection and the errors users see."""

import os

import numpy as np
import pytest

from tfrec_tricks.data.sources import loaders, named_sources
from tfrec_tricks.data.sources.interactions import Interactions
from tfrec_tricks.errors import DataError

RECBOLE_HEADER = "user_id:token\titem_id:token\trating:float\ttimestamp:float\n"


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def assert_table(table, users, items, timestamps=None, numeric=None):
    assert isinstance(table, Interactions)
    np.testing.assert_array_equal(table.users, users)
    np.testing.assert_array_equal(table.items, items)
    assert table.users.dtype.kind == "U" and table.items.dtype.kind == "U"
    if timestamps is None:
        assert table.timestamps is None
    else:
        assert table.timestamps.dtype == np.float64
        np.testing.assert_array_equal(table.timestamps, timestamps)
    numeric = numeric or {}
    assert sorted(table.numeric) == sorted(numeric)
    for name, values in numeric.items():
        assert table.numeric[name].dtype == np.float32
        np.testing.assert_allclose(table.numeric[name], values)


# --- each format ----------------------------------------------------------


def test_grouplens(tmp_path):
    path = write(
        tmp_path,
        "ratings.dat",
        "1::1193::5::978300760\n1::661::3::978302109\n\n2::10::4.5::5\n",
    )
    table = loaders.load_grouplens_ratings(path)
    assert_table(
        table,
        ["1", "1", "2"],
        ["1193", "661", "10"],
        [978300760, 978302109, 5],
        {"rating": [5, 3, 4.5]},
    )
    assert table.source == path
    np.testing.assert_allclose(table.ratings, [5, 3, 4.5])


def test_udata(tmp_path):
    path = write(tmp_path, "u.data", "196\t242\t3\t881250949\n22\t377\t1\t8\n")
    assert_table(
        loaders.load_udata(path),
        ["196", "22"],
        ["242", "377"],
        [881250949, 8],
        {"rating": [3, 1]},
    )


def test_sasrec_keeps_file_order(tmp_path):
    path = write(tmp_path, "seq.txt", "1 30\n1 2\n2 7\n1 30\n")
    table = loaders.load_sasrec(path)
    assert_table(table, ["1", "1", "2", "1"], ["30", "2", "7", "30"])
    assert table.ratings is None


def test_sessions_tab_header(tmp_path):
    path = write(
        tmp_path,
        "clicks.txt",
        "SessionId\tItemId\tTime\n"
        "3\t214716935\t1396437466.94\n"
        "1\t214536502\t1396860669.277\n",
    )
    assert_table(
        loaders.load_sessions(path),
        ["3", "1"],
        ["214716935", "214536502"],
        [1396437466.94, 1396860669.277],
    )


def test_sessions_columns_in_any_order(tmp_path):
    path = write(
        tmp_path,
        "clicks.txt",
        "Time\tItemId\tSessionId\n10.5\t99\ts1\n11\t98\ts2\n",
    )
    assert_table(
        loaders.load_sessions(path), ["s1", "s2"], ["99", "98"], [10.5, 11]
    )


def test_sessions_space_separated_header(tmp_path):
    path = write(tmp_path, "clicks.txt", "SessionId ItemId Time\n1 5 2.0\n")
    assert_table(loaders.load_sessions(path), ["1"], ["5"], [2.0])


def test_recbole_user_inter(tmp_path):
    path = write(
        tmp_path,
        "ml.inter",
        RECBOLE_HEADER + "196\t242\t3\t881250949\n186\t302\t4.5\t891717742\n",
    )
    assert_table(
        loaders.load_recbole(path),
        ["196", "186"],
        ["242", "302"],
        [881250949, 891717742],
        {"rating": [3, 4.5]},
    )


def test_recbole_session_inter_without_rating(tmp_path):
    path = write(
        tmp_path,
        "yc.inter",
        "session_id:token\titem_id:token\ttimestamp:float\n"
        "s1\ti1\t1.5\ns1\ti2\t2.5\ns2\ti1\t3\n",
    )
    assert_table(
        loaders.load_recbole(path),
        ["s1", "s1", "s2"],
        ["i1", "i2", "i1"],
        [1.5, 2.5, 3],
    )


def test_recbole_extra_columns_and_no_timestamp(tmp_path):
    # Token columns are ignored; every other :float column is numeric; no
    # timestamp column means no timestamps (file order is the time order).
    path = write(
        tmp_path,
        "x.inter",
        "item_id:token\tuser_id:token\tgenre:token\tweight:float\n"
        "i9\tu1\tcomedy\t0.25\ni8\tu2\tdrama\t2\n",
    )
    assert_table(
        loaders.load_recbole(path),
        ["u1", "u2"],
        ["i9", "i8"],
        numeric={"weight": [0.25, 2]},
    )


# --- load_file and auto-detection -----------------------------------------

AUTO_CASES = {
    "grouplens": ("ratings.dat", "1::2::5::100\n1::3::4::101\n"),
    "udata": ("u.data", "1\t2\t5\t100\n1\t3\t4\t101\n"),
    "sasrec": ("seq.txt", "1 2\n1 3\n"),
    "sessions": (
        "clicks.txt",
        "SessionId\tItemId\tTime\n1\t2\t100\n1\t3\t101\n",
    ),
    "recbole": ("data.inter", RECBOLE_HEADER + "1\t2\t5\t100\n1\t3\t4\t101\n"),
}


@pytest.mark.parametrize("expected", sorted(AUTO_CASES))
def test_load_file_auto_detects(tmp_path, expected):
    name, text = AUTO_CASES[expected]
    path = write(tmp_path, name, text)
    assert loaders.guess_format(path) == expected
    table = loaders.load_file(path)
    np.testing.assert_array_equal(table.users, ["1", "1"])
    np.testing.assert_array_equal(table.items, ["2", "3"])
    if expected != "sasrec":
        np.testing.assert_array_equal(table.timestamps, [100, 101])
    explicit = loaders.load_file(path, expected)
    np.testing.assert_array_equal(explicit.items, table.items)


def test_load_file_explicit_format_overrides_guess(tmp_path):
    # A tab-separated 2-column file read as sasrec explicitly.
    path = write(tmp_path, "pairs.tsv", "u1\ti1\nu1\ti2\n")
    table = loaders.load_file(path, "sasrec")
    np.testing.assert_array_equal(table.items, ["i1", "i2"])


def test_load_file_unknown_format(tmp_path):
    path = write(tmp_path, "seq.txt", "1 2\n")
    with pytest.raises(DataError, match="Unknown file format.*parquet"):
        loaders.load_file(path, "parquet")


def test_guess_format_unrecognised_first_line(tmp_path):
    path = write(tmp_path, "odd.txt", "a b c\n")
    with pytest.raises(DataError, match="Cannot tell the format") as info:
        loaders.load_file(path)
    assert path in str(info.value)
    assert "sasrec" in str(info.value)  # lists the formats to choose from


# --- errors ---------------------------------------------------------------

MALFORMED = {
    # loader name: (file name, text whose line 3 is bad, expected reason)
    "grouplens": ("r.dat", "1::2::5::9\n\n1::2::5\n", "expected 4 fields"),
    "udata": ("u.data", "1\t2\t5\t9\n1\t3\t5\t9\n1\t2\n", "expected 4 fields"),
    "sasrec": ("s.txt", "1 2\n1 3\n1 2 3\n", "expected 2 fields"),
    "sessions": (
        "c.txt",
        "SessionId\tItemId\tTime\n1\t2\t3\n1\t2\n",
        "expected 3 fields",
    ),
    "recbole": (
        "d.inter",
        RECBOLE_HEADER + "1\t2\t5\t9\n1\t2\t5\n",
        "expected 4 tab",
    ),
}


@pytest.mark.parametrize("file_format", sorted(MALFORMED))
def test_malformed_line_names_file_and_line(tmp_path, file_format):
    name, text, reason = MALFORMED[file_format]
    path = write(tmp_path, name, text)
    with pytest.raises(DataError, match=reason) as info:
        loaders.load_file(path, file_format)
    message = str(info.value)
    assert message.startswith(f"{path}:3:")
    assert "Received line" in message


@pytest.mark.parametrize(
    "file_format, name, text, what",
    [
        ("grouplens", "r.dat", "1::2::5::9\n1::2::five::9\n", "rating 'five'"),
        ("grouplens", "r.dat", "1::2::5::9\n1::2::5::noon\n", "timestamp"),
        ("udata", "u.data", "1\t2\t5\t9\n1\t2\tx\t9\n", "rating 'x'"),
        ("udata", "u.data", "1\t2\t5\t9\n1\t2\t5\t9am\n", "timestamp '9am'"),
        ("sessions", "c.txt", "SessionId\tItemId\tTime\n1\t2\tlate\n", "Time"),
        ("recbole", "d.inter", RECBOLE_HEADER + "1\t2\tgood\t9\n", "rating"),
        ("recbole", "d.inter", RECBOLE_HEADER + "1\t2\t5\tt\n", "timestamp"),
    ],
)
def test_non_numeric_value(tmp_path, file_format, name, text, what):
    path = write(tmp_path, name, text)
    with pytest.raises(DataError, match="is not a number") as info:
        loaders.load_file(path, file_format)
    message = str(info.value)
    assert message.startswith(f"{path}:2:")
    assert what in message


@pytest.mark.parametrize("file_format", ["auto", *loaders.FORMATS])
def test_missing_file(tmp_path, file_format):
    path = str(tmp_path / "nowhere" / "ratings.dat")
    with pytest.raises(DataError, match="not found") as info:
        loaders.load_file(path, file_format)
    assert path in str(info.value)


@pytest.mark.parametrize("file_format", ["auto", *loaders.FORMATS])
def test_empty_file(tmp_path, file_format):
    path = write(tmp_path, "empty.inter", "")
    with pytest.raises(DataError, match="empty") as info:
        loaders.load_file(path, file_format)
    assert path in str(info.value)


@pytest.mark.parametrize(
    "file_format, text",
    [
        ("udata", "\n\n  \n"),
        ("sasrec", "\n\n"),
        ("sessions", "SessionId\tItemId\tTime\n"),
        ("recbole", RECBOLE_HEADER),
    ],
)
def test_no_rows_after_header_or_blank_lines(tmp_path, file_format, text):
    path = write(tmp_path, "rows.txt", text)
    with pytest.raises(DataError, match="No interactions") as info:
        loaders.load_file(path, file_format)
    assert path in str(info.value)


@pytest.mark.parametrize(
    "file_format, header, missing",
    [
        ("sessions", "SessionId\tItem\tTime\n", "ItemId"),
        ("sessions", "session\titem\ttime\n", "SessionId"),
        ("recbole", "user_id:token\titem:token\ttimestamp:float\n", "item_id"),
        ("recbole", "uid:token\titem_id:token\n", "user_id"),
    ],
)
def test_wrong_header(tmp_path, file_format, header, missing):
    path = write(tmp_path, "data.inter", header + "1\t2\t3\n")
    with pytest.raises(DataError) as info:
        loaders.load_file(path, file_format)
    message = str(info.value)
    assert message.startswith(f"{path}:1:")
    assert missing in message


def test_long_malformed_line_is_shortened(tmp_path):
    path = write(tmp_path, "s.txt", "1 " + "x" * 200 + " extra\n")
    with pytest.raises(DataError) as info:
        loaders.load_sasrec(path)
    message = str(info.value)
    assert message.startswith(f"{path}:1:")
    assert "..." in message and "extra" not in message


# --- text is UTF-8 --------------------------------------------------------

UTF8_CASES = {
    # format: (file name, text with user "café_14" and item "crème")
    "grouplens": ("r.dat", "café_14::crème::5::9\n"),
    "udata": ("u.data", "café_14\tcrème\t5\t9\n"),
    "sasrec": ("s.txt", "café_14 crème\n"),
    "sessions": ("c.txt", "SessionId\tItemId\tTime\ncafé_14\tcrème\t9\n"),
    "recbole": ("d.inter", RECBOLE_HEADER + "café_14\tcrème\t5\t9\n"),
}


@pytest.mark.parametrize("file_format", sorted(UTF8_CASES))
def test_utf8_ids_round_trip(tmp_path, file_format):
    name, text = UTF8_CASES[file_format]
    path = write(tmp_path, name, text)
    for table in (
        loaders.load_file(path, file_format),
        loaders.load_file(path),
    ):
        np.testing.assert_array_equal(table.users, ["café_14"])
        np.testing.assert_array_equal(table.items, ["crème"])


@pytest.mark.parametrize("file_format", sorted(UTF8_CASES))
def test_byte_order_mark_is_dropped(tmp_path, file_format):
    name, text = UTF8_CASES[file_format]
    path = tmp_path / name
    path.write_bytes(b"\xef\xbb\xbf" + text.encode("utf-8"))
    assert loaders.guess_format(str(path)) == file_format
    table = loaders.load_file(str(path), file_format)
    np.testing.assert_array_equal(table.users, ["café_14"])


def test_crlf_line_ends(tmp_path):
    text = (RECBOLE_HEADER + "u\ti\t5\t9\n").replace("\n", "\r\n")
    path = tmp_path / "d.inter"
    path.write_bytes(text.encode("utf-8"))
    table = loaders.load_recbole(str(path))
    np.testing.assert_array_equal(table.items, ["i"])
    np.testing.assert_array_equal(table.timestamps, [9])


LATIN1_CASES = {
    # format: (file name, latin-1 text whose line 3 holds the first "é")
    "grouplens": ("r.dat", "1::2::5::9\n1::3::5::9\ncafé_14::2::5::9\n"),
    "udata": ("u.data", "1\t2\t5\t9\n1\t3\t5\t9\ncafé_14\t2\t5\t9\n"),
    "sasrec": ("s.txt", "1 2\n1 3\ncafé_14 2\n"),
    "sessions": ("c.txt", "SessionId\tItemId\tTime\n1\t2\t9\ncafé_14\t2\t9\n"),
    "recbole": ("d.inter", RECBOLE_HEADER + "1\t2\t5\t9\ncafé_14\t2\t5\t9\n"),
}


def assert_not_utf8(info, path, line_number, offset, byte):
    message = str(info.value)
    assert message.startswith(
        f"{path}:{line_number}: not valid UTF-8 at byte offset {offset} "
        f"({byte})"
    )
    assert "iconv -f latin1 -t utf-8" in message


@pytest.mark.parametrize("file_format", ["auto", *sorted(LATIN1_CASES)])
def test_latin1_file_is_refused(tmp_path, file_format):
    name, text = LATIN1_CASES[
        "grouplens" if file_format == "auto" else file_format
    ]
    path = tmp_path / name
    data = text.encode("latin-1")
    path.write_bytes(data)
    with pytest.raises(DataError) as info:
        loaders.load_file(str(path), file_format)
    assert_not_utf8(info, path, 3, data.index(b"\xe9"), "0xe9")


def test_not_utf8_located_far_into_the_file(tmp_path):
    # Past the first read buffer, with CRLF line ends, a BOM and multi-byte
    # characters before it: the line number and byte offset still add up.
    head = "\ufeff" + "café_1\t2\t5\t9\r\n" * 3000
    tail = "x\t2\t5\t9\r\nb\xe4d\t2\t5\t9\r\n"
    path = tmp_path / "u.data"
    path.write_bytes(head.encode("utf-8") + tail.encode("latin-1"))
    with pytest.raises(DataError) as info:
        loaders.load_udata(str(path))
    offset = len(head.encode("utf-8")) + len("x\t2\t5\t9\r\nb")
    assert_not_utf8(info, path, 3002, offset, "0xe4")


def test_not_utf8_on_the_first_line_and_at_the_end(tmp_path):
    path = tmp_path / "s.txt"
    path.write_bytes(b"\xffuser item\n")
    with pytest.raises(DataError) as info:
        loaders.load_file(str(path))  # guess_format reads the first line
    assert_not_utf8(info, path, 1, 0, "0xff")
    path.write_bytes(b"1 2\n1 caf\xc3")  # cut in the middle of "é"
    with pytest.raises(DataError) as info:
        loaders.load_sasrec(str(path))
    assert_not_utf8(info, path, 2, 9, "0xc3")


# --- non-finite numbers ---------------------------------------------------

NON_FINITE = ["nan", "NaN", "inf", "-inf", "Infinity", "-Infinity"]


def non_finite_case(file_format, field, value):
    """(file name, text whose line 2 has ``value`` in ``field``)."""
    rating, time = (value, "9") if field == "rating" else ("5", value)
    return {
        "grouplens": ("r.dat", f"1::2::5::9\n1::3::{rating}::{time}\n"),
        "udata": ("u.data", f"1\t2\t5\t9\n1\t3\t{rating}\t{time}\n"),
        "sessions": ("c.txt", f"SessionId\tItemId\tTime\n1\t3\t{time}\n"),
        "recbole": ("d.inter", RECBOLE_HEADER + f"1\t3\t{rating}\t{time}\n"),
    }[file_format]


@pytest.mark.parametrize("value", NON_FINITE)
@pytest.mark.parametrize(
    "file_format, field",
    [
        ("grouplens", "timestamp"),
        ("udata", "timestamp"),
        ("sessions", "Time"),
        ("recbole", "timestamp"),
        ("grouplens", "rating"),
        ("udata", "rating"),
        ("recbole", "rating"),
    ],
)
def test_non_finite_value(tmp_path, file_format, field, value):
    path = write(tmp_path, *non_finite_case(file_format, field, value))
    with pytest.raises(DataError) as info:
        loaders.load_file(path, file_format)
    message = str(info.value)
    assert message.startswith(
        f"{path}:2: {field} {value!r} is not a finite number."
    )
    assert "Received line" in message


def test_non_finite_recbole_float_column(tmp_path):
    path = write(
        tmp_path,
        "x.inter",
        "user_id:token\titem_id:token\tweight:float\nu\ti\t1\nu\tj\t-inf\n",
    )
    with pytest.raises(DataError, match="weight '-inf' is not a finite"):
        loaders.load_recbole(path)


def test_numeric_value_beyond_float32(tmp_path):
    # 1e39 is a finite float64 but would be stored as an infinite float32.
    path = write(tmp_path, "u.data", "1\t2\t5\t9\n1\t3\t1e39\t9\n")
    with pytest.raises(DataError) as info:
        loaders.load_udata(path)
    assert str(info.value).startswith(
        f"{path}:2: rating '1e39' does not fit in float32"
    )
    # Timestamps are float64: a large one is fine.
    path = write(tmp_path, "u.data", "1\t2\t5\t1e39\n")
    np.testing.assert_array_equal(loaders.load_udata(path).timestamps, [1e39])


# --- the padding token, pipes, literal paths, advice, trailing spaces ----

PADDING_CASES = {
    # format: (file name, text whose line 2 names an item "[PAD]", what)
    "grouplens": ("r.dat", "1::2::5::9\n1::[PAD]::5::9\n", "item id"),
    "udata": ("u.data", "1\t2\t5\t9\n1\t[PAD]\t5\t9\n", "item id"),
    "sasrec": ("s.txt", "1 2\n1 [PAD]\n", "item id"),
    "sessions": ("c.txt", "SessionId\tItemId\tTime\n1\t[PAD]\t9\n", "ItemId"),
    "recbole": ("d.inter", RECBOLE_HEADER + "1\t[PAD]\t5\t9\n", "item_id"),
}


@pytest.mark.parametrize("file_format", sorted(PADDING_CASES))
def test_padding_token_as_an_item_is_refused(tmp_path, file_format):
    name, text, what = PADDING_CASES[file_format]
    path = write(tmp_path, name, text)
    with pytest.raises(DataError) as info:
        loaders.load_file(path, file_format)
    message = str(info.value)
    assert message.startswith(
        f"{path}:2: the {what} '[PAD]' is the reserved padding token"
    )


def test_padding_token_as_a_user_is_an_id_like_any(tmp_path):
    # Only item id 0 is padding: a user may be called "[PAD]".
    path = write(tmp_path, "u.data", "[PAD]\t2\t5\t9\n")
    assert list(loaders.load_file(path).users) == ["[PAD]"]


def _fifo_with(tmp_path, data, name="fifo"):
    """A FIFO that a thread fills with ``data`` once, then closes."""
    import threading

    path = tmp_path / name
    os.mkfifo(path)

    def fill():
        with open(path, "wb") as handle:
            handle.write(data)

    threading.Thread(target=fill, daemon=True).start()
    return str(path)


def test_fifo_is_read_once_as_a_file(tmp_path):
    # Guessing the format, hashing and loading read it three times.
    path = _fifo_with(tmp_path, b"1\t2\t5\t9\n1\t3\t5\t10\n")
    assert loaders.is_pipe(path)
    assert loaders.guess_format(path) == "udata"
    copy = loaders.readable_file(path)
    assert copy != path and open(copy, "rb").read().startswith(b"1\t2")
    table = loaders.load_file(path)
    assert list(table.items) == ["2", "3"]
    assert named_sources.file_paths(path) == [path]


def test_process_substitution_is_read_as_a_file():
    # What bash's <(printf ...) passes: /dev/fd/N of a pipe.
    import threading

    read_end, write_end = os.pipe()

    def fill():
        with os.fdopen(write_end, "wb") as handle:
            handle.write(b"u1 i1\nu1 i2\n")

    threading.Thread(target=fill, daemon=True).start()
    try:
        path = f"/dev/fd/{read_end}"
        assert named_sources.file_paths(path) == [path]
        table = loaders.load_file(path)
        assert list(table.items) == ["i1", "i2"]
        # Read again (another loader, a second pass): the same rows.
        assert list(loaders.load_file(path, "sasrec").items) == ["i1", "i2"]
    finally:
        os.close(read_end)


def test_a_reused_dev_fd_number_is_the_new_pipe():
    # One process (a notebook, a test session) reads <(...) twice; the
    # second pipe gets the first one's freed fd number, and its own data.
    import threading

    def pipe_of(data: bytes) -> int:
        read_end, write_end = os.pipe()

        def fill():
            with os.fdopen(write_end, "wb") as handle:
                handle.write(data)

        threading.Thread(target=fill, daemon=True).start()
        return read_end

    first = pipe_of(b"u1 i1\nu1 i2\n")
    path = f"/dev/fd/{first}"
    assert list(loaders.load_file(path, "sasrec").items) == ["i1", "i2"]
    os.close(first)
    second = pipe_of(b"u7 i9\n")
    try:
        assert second == first  # the lowest free number again
        assert list(loaders.load_file(path, "sasrec").items) == ["i9"]
    finally:
        os.close(second)


def test_existing_path_with_glob_characters_is_taken_literally(tmp_path):
    literal = write(tmp_path, "clicks[1].tsv", "1\t2\t5\t9\n")
    # What glob would read '[1]' as: a character class matching this one.
    write(tmp_path, "clicks1.tsv", "7\t7\t5\t9\n")
    assert named_sources.file_paths(literal) == [literal]
    table = named_sources.load_source("file", data_path=literal)
    assert list(table.interactions.users) == ["1"]
    # A pattern that names no file as written is still a glob.
    pattern = str(tmp_path / "clicks[1].t*")
    assert named_sources.file_paths(pattern) == [str(tmp_path / "clicks1.tsv")]


def test_gzip_utf16_advice_decompresses_first(tmp_path):
    import gzip

    path = tmp_path / "clicks.tsv.gz"
    path.write_bytes(gzip.compress("1 2\n1 3\n".encode("utf-16")))
    with pytest.raises(DataError) as info:
        loaders.load_file(str(path))
    message = str(info.value)
    assert "the file is UTF-16 encoded (and gzip-compressed)" in message
    assert (
        f"gunzip -c {path} | iconv -f utf-16 -t utf-8 > {tmp_path}/clicks.tsv"
    ) in message


def test_gzip_latin1_advice_decompresses_first(tmp_path):
    import gzip

    path = tmp_path / "u.data.gz"
    path.write_bytes(gzip.compress("café\t2\t5\t9\n".encode("latin-1")))
    write(tmp_path, "u.data", "taken\n")  # never overwritten by the advice
    with pytest.raises(DataError) as info:
        loaders.load_file(str(path))
    assert (
        f"gunzip -c {path} | iconv -f latin1 -t utf-8 > {tmp_path}/u.data.utf8"
    ) in str(info.value)


@pytest.mark.parametrize(
    "text, expected",
    [
        ("1\t2\t5\t9\t\n1\t3\t5\t10\t\n", "udata"),
        ("1\t2\t5\t9 \t \n1\t3\t5\t10\n", "udata"),
        ("\n\n1\t2\t5\t9\r\n", "udata"),
        ("u1 i1 \t\nu1 i2\n", "sasrec"),
        ("SessionId\tItemId\tTime\t\n1\t2\t9\n", "sessions"),
    ],
)
def test_auto_format_tolerates_trailing_whitespace(tmp_path, text, expected):
    path = write(tmp_path, "data.txt", text)
    assert loaders.guess_format(path) == expected
    assert len(loaders.load_file(path)) >= 1


def test_unknown_format_message_shows_the_line_as_read(tmp_path):
    path = write(tmp_path, "odd.txt", "a,b,c \t\n")
    with pytest.raises(DataError) as info:
        loaders.guess_format(path)
    # repr: the trailing whitespace is visible.
    assert "its first line 'a,b,c \\t\\n'" in str(info.value)
    assert "--format" in str(info.value)


def test_natural_sort_key_compares_digit_runs_as_numbers():
    names = ["part-10.tsv", "part-2.tsv", "part-1.tsv", "part-02.tsv", "a"]
    assert sorted(names, key=loaders.natural_sort_key) == [
        "a",
        "part-1.tsv",
        "part-02.tsv",
        "part-2.tsv",
        "part-10.tsv",
    ]
