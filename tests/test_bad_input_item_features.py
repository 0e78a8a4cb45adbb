"""Bad item side-information through the real CLI: refused and named, or
counted.

``tfrec-tricks train --item-features X.item`` (RecBole's atomic ``.item``
file) and ``--features``, and ``tfrec-tricks prepare`` with them. A
refusal (an item listed twice, a header without ``item_id:token``, a
number that does not parse or is not finite, a feature the data does not
have, ``train --prepared`` with another ``--item-features`` than the
dataset was prepared with, or ``--features`` naming some of its item
features only, a missing file) exits 1 naming ``file:line``, the column
and the value, with no traceback and nothing written: the output folder
does not exist and every file of the workspace is as it was. What
is not an error is counted and the run trains: an item without a value
(coverage), an item of the interactions without an attribute row, and
attributes of items that never occur in the interactions (cold items,
joining the catalogue). A served model takes raw item ids only: its
signatures do not grow inputs for item attributes.

Bad-input cases run in-process (``cli.main``) where the process boundary
is not what is tested; two run ``tfrec-tricks`` in a subprocess for the
exit code. The unit tests of the reader and of ``--features`` are
tests/data/item_features/test_item_file.py and
tests/training/test_feature_selection.py.
"""

import dataclasses
import json

import pytest

from tests.run_helpers import run_cli, snapshot
from tfrec_tricks import cli

# 20 users, 6 clicks each, over 12 items: every item is in a training
# example (leave-one-out keeps 4 clicks of each user for training).
ITEMS = [f"i{i}" for i in range(12)]
INTERACTIONS = "".join(
    f"u{u}\ti{(u + k) % 12}\t{1 + k % 5}\t{1000 * u + k}\n"
    for u in range(20)
    for k in range(6)
)
HEADER = "item_id:token\tgenre:token_seq\tyear:float\n"


def _row(item, genre=None, year=None):
    index = int(item[1:]) if item[1:].isdigit() else 0
    genre = f"g{index % 3} g{index % 4}" if genre is None else genre
    year = str(1990 + index) if year is None else year
    return f"{item}\t{genre}\t{year}\n"


# Every item of the interactions, one row each.
GOOD = HEADER + "".join(_row(item) for item in ITEMS)
TRAIN = [
    "train",
    "--data",
    "file",
    "--data-path",
    "u.data",
    "--max-len",
    "5",
    "--embedding-dim",
    "8",
    "--epochs",
    "1",
    "--output-dir",
    "runs",
    "--name",
    "run",
]


@pytest.fixture
def workspace(tmp_path, monkeypatch):
    """An empty folder, the working directory, holding ``u.data``."""
    (tmp_path / "u.data").write_text(INTERACTIONS)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _refused(args, capsys, workspace):
    """Runs ``tfrec-tricks ARGS`` in this process; asserts exit code 1, no
    traceback, no output folder and the workspace as it was. Returns the
    error output."""
    before = snapshot(workspace)
    try:
        status = cli.main(args)
    except SystemExit as error:  # argparse: usage and exit 2
        status = error.code
    captured = capsys.readouterr()
    assert status == 1, captured.err[-2000:]
    assert "Traceback" not in captured.err + captured.out
    assert not (workspace / "runs").exists()
    assert snapshot(workspace) == before
    return captured.err


@dataclasses.dataclass
class Case:
    """A refused ``.item`` file.

    Attributes:
        id: the test id.
        text: the file's content (written to ``x.item``).
        messages: texts the error output must hold.
    """

    id: str
    text: str
    messages: list


FILE_CASES = [
    Case(
        "item-listed-twice",
        HEADER + _row("i0") + _row("i1") + _row("i2") + _row("i1", "g9"),
        [
            "x.item:5: item_id 'i1' is listed twice, first at x.item:3",
            "Received line: 'i1\\tg9\\t1991'",
        ],
    ),
    Case(
        "header-without-item-id",
        "id:token\tgenre:token_seq\n" + "i0\tg0\n",
        [
            "x.item:1: the header has no item_id:token column (received "
            "id:token, genre:token_seq)"
        ],
    ),
    Case(
        "item-id-of-another-type",
        "item_id:float\tgenre:token_seq\n" + "1\tg0\n",
        [
            "x.item:1: the header has no item_id:token column (received "
            "item_id:float, genre:token_seq)"
        ],
    ),
    Case(
        "header-is-a-data-line",
        "".join(_row(item) for item in ITEMS),
        ["x.item:1: header field 'i0' is not name:type"],
    ),
    Case(
        "unknown-type",
        "item_id:token\tgenre:string\n" + "i0\tg0\n",
        [
            "x.item:1: header field 'genre:string' has the unknown type "
            "'string'; the types are token, token_seq, float, float_seq"
        ],
    ),
    Case(
        "wrong-number-of-fields",
        HEADER + _row("i0") + "i1\t1991\n",
        [
            "x.item:3: expected 3 tab-separated fields (item_id, genre, "
            "year), received 2",
            "Received line: 'i1\\t1991'",
        ],
    ),
    Case(
        "word-in-float-column",
        HEADER + _row("i0") + _row("i1", year="nineteen"),
        [
            "x.item:3: column 'year': 'nineteen' is not a number",
            "Received line: 'i1\\tg1 g1\\tnineteen'",
        ],
    ),
    Case(
        "decimal-comma-in-float-column",
        HEADER + _row("i0", year="1990,5"),
        ["x.item:2: column 'year': '1990,5' is not a number"],
    ),
    Case(
        "word-in-float-seq-column",
        "item_id:token\tscores:float_seq\n" + "i0\t0.5 high 2\n",
        ["x.item:2: column 'scores': 'high' is not a number"],
    ),
    Case(
        "too-large-for-float32",
        HEADER + _row("i0", year="1e39"),
        ["x.item:2: column 'year': '1e39' does not fit in float32"],
    ),
    *(
        Case(
            f"not-finite-{value}",
            HEADER + _row("i0") + _row("i1") + _row("i2", year=value),
            [
                f"x.item:4: column 'year': '{value}' is not a finite number "
                "(NaN and infinities are refused; leave the field empty for "
                "no value)"
            ],
        )
        for value in ("nan", "NaN", "inf", "-Infinity")
    ),
    Case(
        "not-finite-in-float-seq",
        "item_id:token\tscores:float_seq\n" + "i0\t0.5 nan\n",
        ["x.item:2: column 'scores': 'nan' is not a finite number"],
    ),
    # Quoted as a CSV tool writes them: refused as interaction files refuse
    # them, not read as cold items '"i0"' beside the interactions' i0.
    Case(
        "quoted-item-id",
        HEADER + "".join(_row(f'"{item}"') for item in ITEMS),
        [
            "x.item:2: the item_id '\"i0\"' is in quotes; fields are read "
            "as written, without CSV quoting: remove the quotes",
            "Received line: '\"i0\"\\tg0 g0\\t1990'",
        ],
    ),
    Case(
        "quoted-header",
        '"item_id:token"\t"year:float"\n' + '"i0"\t"1990"\n',
        [
            "x.item:1: header field '\"item_id:token\"' is in quotes; "
            "fields are read as written, without CSV quoting"
        ],
    ),
    Case(
        "quoted-number",
        HEADER + _row("i0", year='"1990"'),
        [
            "x.item:2: column 'year': '\"1990\"' is not a number (fields "
            "are read as written, without CSV quoting: remove the quotes)"
        ],
    ),
]


@pytest.mark.parametrize("case", FILE_CASES, ids=lambda case: case.id)
def test_a_bad_item_file_is_refused_naming_the_line(case, workspace, capsys):
    (workspace / "x.item").write_text(case.text)
    error = _refused([*TRAIN, "--item-features", "x.item"], capsys, workspace)
    for message in case.messages:
        assert message in error, error[-2000:]


# --- --features against what the data has ---------------------------------


@pytest.mark.parametrize(
    "flags, messages",
    [
        (
            ["--item-features", "x.item", "--features", "colour"],
            [
                "--features names 'colour', which the data does not have",
                "It has, per interaction: rating, time_gap; per item: "
                "genre, year",
                "Received: --features colour",
            ],
        ),
        (
            ["--item-features", "x.item", "--features", "genre", "genres"],
            ["--features names 'genres'", "per item: genre, year"],
        ),
        (
            # 'all' took every feature and dropped the unknown name.
            ["--item-features", "x.item", "--features", "all", "colour"],
            [
                "--features takes feature names, or 'all' alone",
                "Received: --features all colour",
            ],
        ),
        (
            # Item features without a file to hold them.
            ["--features", "genre"],
            [
                "--features names 'genre'",
                "per interaction: rating, time_gap; per item: none (give "
                "the item attributes with --item-features FILE.item",
            ],
        ),
    ],
    ids=["unknown", "misspelt", "all-beside-a-name", "no-item-file"],
)
def test_features_the_data_does_not_have_are_refused_with_what_it_has(
    flags, messages, workspace, capsys
):
    (workspace / "x.item").write_text(GOOD)
    error = _refused([*TRAIN, *flags], capsys, workspace)
    for message in messages:
        assert message in error, error[-2000:]


# An item column named as a per-interaction feature of u.data (its rating,
# the time gap of its timestamps).
CLASHING = "item_id:token\trating:float\tgenre:token_seq\n" + "".join(
    f"{item}\t{index % 5}\tg{index % 3}\n" for index, item in enumerate(ITEMS)
)


@pytest.mark.parametrize(
    "command, features",
    [
        (TRAIN, ["all"]),
        (TRAIN, ["rating", "genre"]),
        (["prepare", "--data", "file", "--data-path", "u.data"], ["all"]),
    ],
    ids=["train-all", "train-the-name", "prepare-all"],
)
def test_an_item_column_named_as_a_per_interaction_feature_is_refused(
    command, features, workspace, capsys
):
    # Before: the data was prepared and the run reported, then the model's
    # build failed with "Invalid model config: item_features must be ...".
    (workspace / "x.item").write_text(CLASHING)
    args = [*command, "--item-features", "x.item", "--features", *features]
    if command[0] == "prepare":
        args += ["--output", "prepared"]
    error = _refused(args, capsys, workspace)
    shown = " ".join(features)
    assert (
        f"--features {shown} selects 'rating' twice: a column of x.item (an "
        "item feature) and a per-interaction feature of the data. A name "
        "names one feature: rename that column of the .item file (e.g. "
        f"item_rating). Received: --features {shown}"
    ) in " ".join(error.split())
    assert "Invalid model config" not in error
    assert not (workspace / "prepared").exists()


# --- where the file is read from --------------------------------------------


PREPARE = ["prepare", "--data", "file", "--data-path", "u.data"]


def test_a_bad_item_file_is_refused_by_prepare(workspace, capsys):
    (workspace / "x.item").write_text(HEADER + _row("i0") + _row("i0"))
    args = [*PREPARE, "--item-features", "x.item", "--output", "prepared"]
    error = _refused(args, capsys, workspace)
    assert "x.item:3: item_id 'i0' is listed twice, first at x.item:2" in error
    assert not (workspace / "prepared").exists()


def test_features_the_data_does_not_have_are_refused_by_prepare(
    workspace, capsys
):
    (workspace / "x.item").write_text(GOOD)
    args = [*PREPARE, "--item-features", "x.item", "--features", "colour"]
    error = _refused([*args, "--output", "prepared"], capsys, workspace)
    assert "--features names 'colour', which the data does not have" in error
    assert "per interaction: rating, time_gap; per item: genre, year" in error
    assert not (workspace / "prepared").exists()


@pytest.mark.parametrize(
    "prepare_flags, train_flags, messages",
    [
        (
            # Prepared without item features: an .item file contradicts.
            [],
            ["--item-features", "x.item"],
            [
                "'prepared' was prepared with other data options than the "
                "ones given: item_features='x.item' (prepared with None)"
            ],
        ),
        (
            ["--item-features", "x.item"],
            ["--item-features", "y.item"],
            ["item_features='y.item' (prepared with 'x.item')"],
        ),
        (
            ["--item-features", "x.item"],
            ["--features", "genre", "time_gap"],
            [
                "'prepared' was prepared with the item features ['genre', "
                "'year']; --features names ['genre'] of them",
                "Received: --features genre time_gap",
            ],
        ),
        (
            ["--item-features", "x.item"],
            ["--features", "colour"],
            [
                "--features names 'colour', which the data does not have",
                "per item: genre, year",
            ],
        ),
    ],
    ids=[
        "item-file-beside-none",
        "another-item-file",
        "some-item-features",
        "unknown-feature",
    ],
)
def test_train_prepared_refuses_item_features_that_contradict_it(
    prepare_flags, train_flags, messages, workspace, capsys
):
    (workspace / "x.item").write_text(GOOD)
    (workspace / "y.item").write_text(GOOD)
    args = [*PREPARE, *prepare_flags, "--output", "prepared"]
    assert cli.main(args) == 0
    capsys.readouterr()
    args = ["train", "--prepared", "prepared", *train_flags, "--epochs", "1"]
    error = _refused([*args, "--output-dir", "runs"], capsys, workspace)
    for message in messages:
        assert message in error, error[-2000:]


def test_a_missing_item_file_is_refused_naming_the_path(workspace, capsys):
    error = _refused(
        [*TRAIN, "--item-features", "missing.item"], capsys, workspace
    )
    assert (
        "Item features file (.item) not found. Received: path='missing.item'"
    ) in error
    (workspace / "items").mkdir()
    error = _refused([*TRAIN, "--item-features", "items"], capsys, workspace)
    assert "'items' is a directory, not an .item file" in error


@pytest.mark.slow
@pytest.mark.parametrize(
    "text, messages",
    [
        (
            HEADER + _row("i0") + _row("i0"),
            ["x.item:3: item_id 'i0' is listed twice, first at x.item:2"],
        ),
        (None, ["not found. Received: path='x.item'"]),
        (
            HEADER + _row('"i0"'),
            ["x.item:2: the item_id '\"i0\"' is in quotes"],
        ),
    ],
    ids=["item-listed-twice", "missing-file", "quoted-item-id"],
)
def test_refusals_exit_1_from_a_process(text, messages, tmp_path):
    (tmp_path / "u.data").write_text(INTERACTIONS)
    if text is not None:
        (tmp_path / "x.item").write_text(text)
    before = snapshot(tmp_path)
    result = run_cli(*TRAIN, "--item-features", "x.item", cwd=tmp_path)
    assert result.returncode == 1, result.stderr[-2000:]
    assert "Traceback" not in result.stderr, result.stderr[-2000:]
    for message in messages:
        assert message in result.stderr, result.stderr[-2000:]
    assert not (tmp_path / "runs").exists()
    assert snapshot(tmp_path) == before


def test_the_facade_refuses_as_the_command_line_does(workspace):
    import tfrec_tricks

    options = dict(epochs=1, max_len=5, embedding_dim=8, output_dir="runs")
    before = snapshot(workspace)
    (workspace / "x.item").write_text(HEADER + _row('"i0"'))
    recommender = tfrec_tricks.Recommender(item_features="x.item", **options)
    with pytest.raises(ValueError, match="x.item:2: the item_id '\"i0\"' is"):
        recommender.fit("u.data")
    (workspace / "x.item").write_text(CLASHING)
    recommender = tfrec_tricks.Recommender(
        item_features="x.item", features=("all",), **options
    )
    with pytest.raises(ValueError, match="selects 'rating' twice: a column"):
        recommender.fit("u.data")
    # A header alone: the warning, then (here) --features' refusal.
    (workspace / "x.item").write_text(HEADER)
    recommender = tfrec_tricks.Recommender(
        item_features="x.item", features=("colour",), **options
    )
    with (
        pytest.warns(UserWarning, match="x.item holds a header and no item"),
        pytest.raises(ValueError, match="--features names 'colour'"),
    ):
        recommender.fit("u.data")
    assert not (workspace / "runs").exists()
    (workspace / "x.item").unlink()
    assert snapshot(workspace) == before


# --- counted, not refused: the run trains -----------------------------------


@pytest.mark.slow
def test_a_header_only_item_file_warns_in_one_line_and_trains(tmp_path):
    (tmp_path / "u.data").write_text(INTERACTIONS)
    (tmp_path / "x.item").write_text(HEADER)
    before = snapshot(tmp_path)
    result = run_cli(*TRAIN, "--item-features", "x.item", cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    assert (
        "tfrec-tricks train: warning: x.item holds a header and no item "
        "rows: no item has attributes from it\n"
    ) in result.stderr
    # Not Python's warning format (the source file and line of the call).
    assert "UserWarning" not in result.stderr
    assert "Traceback" not in result.stderr
    assert (
        "0 in no training example (cold: ranked by their attributes), "
        "12 without an attribute row"
    ) in result.stdout
    after = snapshot(tmp_path)
    assert {name: after.get(name) for name in before} == before


def _trained(text, workspace, capsys, *flags):
    """Trains ``runs/run`` with ``text`` as ``x.item``: the run summary
    (stdout), metrics.json and vocabulary.json."""
    (workspace / "x.item").write_text(text)
    status = cli.main([*TRAIN, "--item-features", "x.item", *flags])
    captured = capsys.readouterr()
    assert status == 0, captured.err[-2000:]
    run = workspace / "runs" / "run"
    metrics = json.loads((run / "metrics.json").read_text())
    vocabulary = json.loads((run / "vocabulary.json").read_text())
    return captured.out, metrics, vocabulary


def _rows(metrics):
    return {row["name"]: row for row in metrics["item_features"]}


@pytest.mark.slow
def test_an_empty_token_seq_is_counted_as_coverage(workspace, capsys):
    # i3: an empty field; i4: spaces only (no token once split).
    rows = [
        _row(item, genre={"i3": "", "i4": "  "}.get(item)) for item in ITEMS
    ]
    out, metrics, _ = _trained(HEADER + "".join(rows), workspace, capsys)
    assert "Item feature genre: token_seq, " in out
    assert "83.3% of items have a value" in out  # 10 of 12
    assert "Item feature year: float, 100.0% of items have a value" in out
    assert _rows(metrics)["genre"]["coverage"] == pytest.approx(10 / 12)
    assert _rows(metrics)["year"]["coverage"] == 1.0
    assert metrics["items_without_attributes"] == 0
    assert metrics["cold_items"] == 0


@pytest.mark.slow
def test_an_item_without_an_attribute_row_is_counted(workspace, capsys):
    text = HEADER + "".join(_row(item) for item in ITEMS[:-2])
    out, metrics, vocabulary = _trained(text, workspace, capsys)
    assert (
        "Items: 0 in no training example (cold: ranked by their "
        "attributes), 2 without an attribute row"
    ) in out
    assert metrics["items_without_attributes"] == 2
    assert metrics["cold_items"] == 0
    # No value for either feature: coverage counts them too.
    assert _rows(metrics)["genre"]["coverage"] == pytest.approx(10 / 12)
    assert _rows(metrics)["year"]["coverage"] == pytest.approx(10 / 12)
    assert set(vocabulary["items"][1:]) == set(ITEMS)


@pytest.mark.slow
def test_attributes_of_items_without_interactions_make_cold_items(
    workspace, capsys
):
    # Three items no user clicked, one before the others, two after.
    cold = ["new-b", "new-a", "new-c"]
    rows = [_row(cold[0]), *map(_row, ITEMS), _row(cold[1]), _row(cold[2])]
    out, metrics, vocabulary = _trained(
        HEADER + "".join(rows), workspace, capsys
    )
    assert (
        "Items: 3 in no training example (cold: ranked by their "
        "attributes), 0 without an attribute row"
    ) in out
    assert metrics["cold_items"] == 3
    assert metrics["items_without_attributes"] == 0
    # The catalogue grows: the cold items after the others, in file order.
    assert vocabulary["items"][0] == "[PAD]"
    assert vocabulary["items"][-3:] == cold
    assert set(vocabulary["items"][1:-3]) == set(ITEMS)
    assert _rows(metrics)["genre"]["coverage"] == 1.0


# --- a served model takes raw ids only ---------------------------------------


@pytest.mark.slow
def test_a_served_feature_model_takes_only_the_history(workspace, capsys):
    import tensorflow as tf

    _trained(GOOD, workspace, capsys, "--features", "genre", "year")
    assert (workspace / "runs" / "run" / "item_features.json").is_file()
    args = ["export", "runs/run", "--name", "m", "--base-path", "served"]
    status = cli.main(args)
    assert status == 0, capsys.readouterr().err[-2000:]
    loaded = tf.saved_model.load(str(workspace / "served" / "m" / "1"))
    signatures = loaded.signatures
    history = tf.TensorSpec([None, None], tf.string, name="history")
    # The inputs of an id-only model: the item features live in the model
    # (looked up by item id), a request cannot pass or override them.
    assert signatures["serving_default"].structured_input_signature == (
        (),
        {"history": history},
    )
    assert signatures["score_candidates"].structured_input_signature[1] == {
        "history": history,
        "candidate_ids": tf.TensorSpec(
            [None, None], tf.string, name="candidate_ids"
        ),
    }
    request = json.loads((workspace / "served" / "m.request.json").read_text())
    assert {key for row in request["instances"] for key in row} == {"history"}
    # A request naming an attribute fails, naming the input. TF Serving
    # answers it with INVALID_ARGUMENT (HTTP 400) before the model runs:
    # gRPC and REST "inputs": "input size does not match signature: 2!=1
    # len({genre,history}) != len({history}). Sent extra: {genre}. Missing
    # but required: {}."; REST "instances": "Failed to process element: 0
    # key: genre of 'instances' list. Error: ... JSON object: does not have
    # named input: genre".
    history_ids = tf.constant([["i1", "i2"]])
    with pytest.raises(TypeError, match="unexpected keyword argument 'genre'"):
        signatures["serving_default"](
            history=history_ids, genre=tf.constant([["g1"]])
        )
    # The history alone is served: ids of the catalogue, top-k.
    served = signatures["serving_default"](history=history_ids)
    assert served["item_ids"].shape == (1, 10)
