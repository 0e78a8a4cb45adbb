"""The built-in MovieLens datasets' metadata as item features."""

import re

import numpy as np
import pytest

from tfrec_tricks.data.item_features.encoding import encode_item_features
from tfrec_tricks.data.item_features.movielens import (
    MOVIELENS_METADATA,
    movielens_item_features,
)
from tfrec_tricks.data.sources import named_sources
from tfrec_tricks.errors import DataError

ITEM_MAP = (
    "item_idx\tMovieID\ttitle\tgenres\n"
    "1\t1\tToy Story (1995)\tAnimation|Children's|Comedy\n"
    "2\t5\tCafé (no year)\tFilm Noir\n"
    "\n"
    "3\t9\tBlank (2000) \t\n"
)
MOVIES_DAT = (
    "1::Toy Story (1995)::Animation|Children's|Comedy\n"
    "5::Caf\xe9 (1999)::Drama\n"
    "9::Untitled::Sci Fi|War\n"
)
U_GENRE = "unknown|0\nAction|1\nFilm Noir|2\n\n"
U_ITEM = (
    "1|Toy Story (1995)|01-Jan-1995||http://x|0|1|0\n"
    "267|unknown||||1|0|0\n"
    "3|Caf\xe9 (1971)|4-Feb-1971||http://y|0|1|1\n"
    "4|Nothing (1980)|01-Jan-1980||http://z|0|0|0\n"
)


def write(folder, relative, text, encoding="utf-8"):
    path = folder / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.encode(encoding))
    return str(path)


@pytest.fixture
def data_dir(tmp_path):
    write(tmp_path, "ml-1m/item_map.tsv", ITEM_MAP)
    write(tmp_path, "ml-1m/movies.dat", MOVIES_DAT, "iso-8859-1")
    write(tmp_path, "ml-100k/u.genre", U_GENRE, "iso-8859-1")
    write(tmp_path, "ml-100k/u.item", U_ITEM, "iso-8859-1")
    return tmp_path


def refused(data_dir, name, relative, text, line, encoding="utf-8"):
    """The message reading ``name`` gives once ``relative`` is ``text``,
    checked to start with ``file:line``."""
    path = write(data_dir, relative, text, encoding)
    with pytest.raises(DataError) as caught:
        movielens_item_features(name, str(data_dir))
    message = str(caught.value)
    assert message.startswith(f"{path}:{line}: "), message
    return message


# --- each dataset -----------------------------------------------------------


def test_ml_1m_is_keyed_by_item_idx(data_dir):
    table = movielens_item_features("ml-1m", str(data_dir))
    assert table.kinds == {"genres": "token_seq", "year": "float"}
    assert table.source == str(data_dir / "ml-1m" / "item_map.tsv")
    assert table.rows == {
        "1": {"genres": ("Animation", "Children's", "Comedy"), "year": 1995.0},
        "2": {"genres": ("Film_Noir",)},
        "3": {"year": 2000.0},
    }


def test_ml_1m_timed_is_keyed_by_movie_id(data_dir):
    table = movielens_item_features("ml-1m-timed", str(data_dir))
    assert table.source == str(data_dir / "ml-1m" / "movies.dat")
    assert table.rows == {
        "1": {"genres": ("Animation", "Children's", "Comedy"), "year": 1995.0},
        "5": {"genres": ("Drama",), "year": 1999.0},
        "9": {"genres": ("Sci_Fi", "War")},
    }


def test_ml_100k_genres_from_flags_and_year_from_release_date(data_dir):
    table = movielens_item_features("ml-100k", str(data_dir))
    assert table.source == str(data_dir / "ml-100k" / "u.item")
    assert table.rows == {
        "1": {"genres": ("Action",), "year": 1995.0},
        "267": {"genres": ("unknown",)},
        "3": {"genres": ("Action", "Film_Noir"), "year": 1971.0},
        "4": {"year": 1980.0},
    }


def test_default_data_dir_is_the_datasets_one(data_dir, monkeypatch):
    monkeypatch.setenv(named_sources.DATA_ENV, str(data_dir))
    assert movielens_item_features("ml-1m").rows["1"]["year"] == 1995.0


def test_encodes_against_the_catalogue(data_dir):
    table = movielens_item_features("ml-100k", str(data_dir))
    features = encode_item_features(
        table, ["[PAD]", "1", "3", "4"], np.array([0, 1, 1, 0], bool)
    )
    assert features.specs[0].vocabulary == ("Action", "Film_Noir")
    np.testing.assert_array_equal(
        features.dense("genres"), [[0, 0], [2, 0], [2, 3], [0, 0]]
    )


# --- refusals ---------------------------------------------------------------


@pytest.mark.parametrize("name", ["yoochoose-100k", "synthetic", "file"])
def test_unknown_dataset_lists_those_with_metadata(data_dir, name):
    with pytest.raises(DataError) as caught:
        movielens_item_features(name, str(data_dir))
    message = str(caught.value)
    assert repr(name) in message
    assert "ml-1m, ml-1m-timed, ml-100k" in message


@pytest.mark.parametrize(
    "name, relative",
    [*MOVIELENS_METADATA.items(), ("ml-100k", "ml-100k/u.genre")],
)
def test_missing_file_names_its_path(tmp_path, name, relative):
    for other in ("ml-100k/u.genre", "ml-100k/u.item"):
        if other != relative:
            write(tmp_path, other, "")
    with pytest.raises(DataError) as caught:
        movielens_item_features(name, str(tmp_path))
    message = str(caught.value)
    assert repr(str(tmp_path / relative)) in message
    assert "--data-path" in message and named_sources.DATA_ENV in message


def test_item_map_header_and_fields(data_dir):
    message = refused(
        data_dir, "ml-1m", "ml-1m/item_map.tsv", "idx\tid\ttitle\tg\n", 1
    )
    assert "expected the header item_idx<TAB>MovieID<TAB>title<TAB>genres" in (
        message
    )
    header = ITEM_MAP.splitlines(keepends=True)[0]
    message = refused(
        data_dir, "ml-1m", "ml-1m/item_map.tsv", header + "1\t1\tA\n", 2
    )
    assert "expected 4 tab-separated fields" in message
    assert "received 3" in message and "'1\\t1\\tA'" in message


def test_item_map_duplicate_and_empty_ids(data_dir):
    text = ITEM_MAP + "2\t7\tB (1990)\tDrama\n"
    message = refused(data_dir, "ml-1m", "ml-1m/item_map.tsv", text, 6)
    path = data_dir / "ml-1m" / "item_map.tsv"
    assert f"item_idx '2' is listed twice, first at {path}:3" in message
    text = ITEM_MAP + "\t7\tB (1990)\tDrama\n"
    message = refused(data_dir, "ml-1m", "ml-1m/item_map.tsv", text, 6)
    assert "the item_idx is empty" in message


def test_item_map_not_utf8(data_dir):
    path = data_dir / "ml-1m" / "item_map.tsv"
    path.write_bytes(
        ITEM_MAP.encode() + "4\t7\tCaf\xe9 (1990)\t\n".encode("latin-1")
    )
    with pytest.raises(DataError) as caught:
        movielens_item_features("ml-1m", str(data_dir))
    assert str(caught.value).startswith(
        f"{path}:6: not valid utf-8 at byte offset 7 of the line (0xe9)"
    )


def test_movies_dat_fields_and_duplicates(data_dir):
    message = refused(
        data_dir,
        "ml-1m-timed",
        "ml-1m/movies.dat",
        MOVIES_DAT + "10::Two::Drama::x\n",
        4,
    )
    assert "expected 3 fields MovieID::Title::Genres, received 4" in message
    message = refused(
        data_dir,
        "ml-1m-timed",
        "ml-1m/movies.dat",
        MOVIES_DAT + "5::Again (1990)::Drama\n",
        4,
    )
    path = data_dir / "ml-1m" / "movies.dat"
    assert f"MovieID '5' is listed twice, first at {path}:2" in message


def test_u_item_refusals(data_dir):
    relative = "ml-100k/u.item"
    message = refused(data_dir, "ml-100k", relative, "1|A|||x|0|1\n", 1)
    assert "expected 8 |-separated fields" in message
    assert "3 genre flags), received 7" in message
    message = refused(data_dir, "ml-100k", relative, "1|A|||x|0|2|0\n", 1)
    assert "genre flag 'Action': '2' is not 0 or 1" in message
    text = U_ITEM + "5|B|1995||x|0|1|0\n"
    message = refused(data_dir, "ml-100k", relative, text, 5)
    assert "column 'release date': '1995' is not dd-Mon-yyyy" in message
    text = U_ITEM + "3|B|||x|0|1|0\n"
    message = refused(data_dir, "ml-100k", relative, text, 5)
    assert "movie id '3' is listed twice" in message


def test_u_genre_refusals(data_dir):
    relative = "ml-100k/u.genre"
    message = refused(data_dir, "ml-100k", relative, "Action\n", 1)
    assert "expected genre|index" in message
    message = refused(data_dir, "ml-100k", relative, "A|0\nB|0\n", 2)
    assert "index '0' given twice ('A' and 'B')" in message
    write(data_dir, relative, "A|0\nB|2\n")
    with pytest.raises(DataError, match=re.escape("Received: [0, 2]")):
        movielens_item_features("ml-100k", str(data_dir))


# --- the real files ---------------------------------------------------------


def genres(table):
    return {g for row in table.rows.values() for g in row.get("genres", ())}


@pytest.mark.real_data
def test_real_ml_1m(shared_data):
    table = movielens_item_features("ml-1m", str(shared_data))
    # The SASRec-format file's items: contiguous 1..3706.
    assert list(table.rows) == [str(k) for k in range(1, 3_707)]
    assert len(genres(table)) == 18
    assert all("year" in row and "genres" in row for row in table.rows.values())
    assert table.rows["1"] == {
        "genres": ("Animation", "Children's", "Comedy"),
        "year": 1995.0,
    }


@pytest.mark.real_data
def test_real_ml_1m_timed(shared_data):
    table = movielens_item_features("ml-1m-timed", str(shared_data))
    assert len(table.rows) == 3_883
    assert len(genres(table)) == 18
    assert table.rows["1193"]["genres"] == ("Drama",)
    assert table.rows["1193"]["year"] == 1975.0


@pytest.mark.real_data
def test_real_ml_100k(shared_data):
    table = movielens_item_features("ml-100k", str(shared_data))
    assert list(table.rows) == [str(k) for k in range(1, 1_683)]
    assert len(genres(table)) == 19 and "unknown" in genres(table)
    # Movie 267 has no release date.
    assert table.rows["267"] == {"genres": ("unknown",)}
    assert table.rows["1373"]["year"] == 1971.0


@pytest.mark.real_data
@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(MOVIELENS_METADATA))
def test_real_keys_are_the_loaders_item_ids(shared_data, name):
    table = movielens_item_features(name, str(shared_data))
    source = named_sources.load_source(name, data_path=str(shared_data))
    items = set(np.unique(source.interactions.items).tolist())
    assert items <= set(table.rows)
    if name != "ml-1m-timed":  # movies.dat lists movies nobody rated here
        assert items == set(table.rows)
