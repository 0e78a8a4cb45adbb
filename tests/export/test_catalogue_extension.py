"""export --add-items (``tfrec_tricks.export.catalogue_extension``): new
items join a trained model's catalogue without retraining, the old items
keep their scores, and what cannot be extended exactly is refused."""

import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from tests.run_helpers import assert_clean_error, run_cli, snapshot
from tfrec_tricks.data.item_features.encoding import ItemFeatureSpec
from tfrec_tricks.data.item_features.item_file import ItemFeatureTable
from tfrec_tricks.errors import DataError
from tfrec_tricks.export.catalogue_extension import (
    check_extensible,
    extend_catalogue,
    load_feature_specs,
)
from tfrec_tricks.export.model_identity import ModelIdentity, read_identity
from tfrec_tricks.models import ModelConfig, SequentialRetrievalModel
from tfrec_tricks.testing.test_case import BLOCK_PACKAGE_PREAMBLE
from tfrec_tricks.training.run_directory import check_finished_run

ITEMS = ["[PAD]", "a", "b", "c", "d", "e", "f", "g"]
SPECS = [
    ItemFeatureSpec("genres", "token_seq", 2, ("Drama", "War", "Comedy")),
    ItemFeatureSpec("year", "float", 1, mean=2000.0, variance=25.0),
    ItemFeatureSpec("color", "token", 1, ("red", "blue")),
]
KINDS = {spec.name: spec.kind for spec in SPECS}
# The trained model's attributes of its items; "g" is a cold item (never
# trained: id_known 0), "f" has no attribute row.
ATTRIBUTES = {
    "a": {"genres": ("Drama",), "year": 1999.0, "color": "red"},
    "b": {"genres": ("War", "Comedy"), "year": 2004.0, "color": "blue"},
    "c": {"genres": ("Comedy",), "color": "red"},
    "d": {"year": 1990.0},
    "e": {"genres": ("Drama", "War"), "year": 2001.0, "color": "blue"},
    "g": {"genres": ("War",), "year": 1995.0, "color": "red"},
}
# The file --add-items reads: "a" is in the catalogue already (its new
# attributes are ignored), "twin" has the attributes of the cold "g",
# "odd" an unknown token, no year and a longer genre list.
NEW_ROWS = {
    "a": {"genres": ("Comedy",), "year": 1950.0, "color": "blue"},
    "twin": dict(ATTRIBUTES["g"]),
    "odd": {"genres": ("SciFi", "Drama", "War"), "color": "green"},
}


def feature_dicts(specs=SPECS):
    return tuple(
        {
            "name": s.name,
            "kind": s.kind,
            "width": s.width,
            "vocabulary_size": s.vocabulary_size,
            "mean": s.mean,
            "variance": s.variance,
        }
        for s in specs
    )


def encoded_values():
    """The model's item values of ``ATTRIBUTES`` (as the run encodes)."""
    genres = np.zeros((len(ITEMS), 2), np.int32)
    year = np.full((len(ITEMS), 1), np.nan, np.float32)
    color = np.zeros((len(ITEMS), 1), np.int32)
    ids = {"Drama": 2, "War": 3, "Comedy": 4, "red": 2, "blue": 3}
    for item, row in ATTRIBUTES.items():
        i = ITEMS.index(item)
        tokens = [ids[t] for t in row.get("genres", ())]
        genres[i, : len(tokens)] = tokens
        year[i, 0] = row.get("year", np.nan)
        color[i, 0] = ids.get(row.get("color"), 0)
    return {"genres": genres, "year": year, "color": color}


def feature_model(seed=0, item_graph=None, **options):
    """A model with item features and random (nonzero) biases."""
    tf.keras.utils.set_random_seed(seed)
    config = ModelConfig(
        num_items=len(ITEMS),
        max_len=4,
        embedding_dim=8,
        item_features=feature_dicts(),
        **options,
    )
    known = np.ones(len(ITEMS), np.float32)
    known[ITEMS.index("g")] = 0.0
    model = SequentialRetrievalModel(
        config,
        item_graph=item_graph,
        item_feature_values={"values": encoded_values(), "id_known": known},
    )
    bias = model.item_embedding.output_bias
    bias.assign(np.random.default_rng(seed).normal(size=bias.shape))
    return model


def new_table(rows=NEW_ROWS, kinds=KINDS, source="new.item"):
    return ItemFeatureTable(dict(kinds), dict(rows), source)


def logits(model, histories, features=()):
    ids = np.zeros((len(histories), 4), np.int32)
    for row, history in enumerate(histories):
        ids[row, : len(history)] = history
    inputs = {"history": ids}
    inputs.update({name: np.zeros(ids.shape, np.float32) for name in features})
    return model(inputs, training=False).numpy()


HISTORIES = [[], [1], [2, 5, 3], [7, 1, 1, 4]]


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"head": "softmax_no_dup"},
        {"head": "cpr", "cpr_reranker_ks": (), "cpr_mi": True},
        {"tie_embeddings": False},
        {"objective": "sampled"},
        {"feature_fusion": "sum", "encoder": "sasrec", "num_heads": 2},
        {"features": ("time_gap",), "cosine_temperature": 0.5},
        {"sse_item_probability": 0.2, "sse_label_probability": 0.1},
        {"encoder": "hstu", "num_layers": 2, "num_heads": 2},
    ],
    ids=[
        "softmax",
        "softmax_no_dup",
        "cpr-no-rerankers",
        "untied",
        "sampled-logq",
        "sum-sasrec",
        "time_gap-cosine",
        "sse-graph",
        "hstu",
    ],
)
def test_old_items_keep_their_scores_and_new_ones_rank_by_attributes(options):
    graph = [[1, 2], [2, 3]] if "sse_item_probability" in options else None
    model = feature_model(item_graph=graph, **options)
    features = options.get("features", ())
    extended = extend_catalogue(model, ITEMS, SPECS, new_table())
    new = extended.model
    assert extended.items == [*ITEMS, "twin", "odd"]
    assert (extended.added, extended.kept) == (("twin", "odd"), ("a",))
    assert new.config.num_items == len(ITEMS) + 2

    before = logits(model, HISTORIES, features)
    after = logits(new, HISTORIES, features)
    np.testing.assert_allclose(after[:, : len(ITEMS)], before, atol=1e-5)
    assert (after[:, len(ITEMS) :] > -1e8).all()

    g, twin = ITEMS.index("g"), len(ITEMS)
    # In a history the twin reads the fused row of the cold "g" it copies:
    # the same states, so the same scores of every other item.
    others = [i for i in range(len(ITEMS) + 2) if i not in (g, twin)]
    np.testing.assert_allclose(
        logits(new, [[1, g]], features)[:, others],
        logits(new, [[1, twin]], features)[:, others],
        atol=1e-5,
    )
    if options.get("tie_embeddings", True):
        # Tied: scored against that row too, with the mean bias of both
        # (the last history holds g: softmax_no_dup ranks it last).
        np.testing.assert_allclose(after[:3, g], after[:3, twin], atol=1e-5)


def test_new_rows_of_every_per_item_weight():
    model = feature_model(objective="sampled", tie_embeddings=False)
    new = extend_catalogue(model, ITEMS, SPECS, new_table()).model
    n = len(ITEMS)
    encoder = new.item_features
    values = {
        f["name"]: w.numpy()
        for f, w in zip(encoder.features, encoder.item_values)
    }
    # "odd" has three genres: the width grows, old rows are padded; its
    # SciFi and green are out-of-vocabulary (1), its year missing (NaN).
    assert values["genres"].shape == (n + 2, 3)
    old = encoded_values()
    np.testing.assert_array_equal(values["genres"][:n, :2], old["genres"])
    assert (values["genres"][:n, 2] == 0).all()
    assert values["genres"][n:].tolist() == [[3, 0, 0], [1, 2, 3]]
    assert values["color"][n:, 0].tolist() == [2, 1]
    assert values["year"][n, 0] == 1995.0 and np.isnan(values["year"][n + 1, 0])
    # "a" keeps its trained attributes (the file's are ignored).
    assert values["year"][1, 0] == 1999.0
    assert encoder.id_known.numpy()[n:].tolist() == [0.0, 0.0]
    assert encoder.features[0]["width"] == 3
    # The id table, the untied output table and the bias: the trained
    # items' mean row (the cold "g" and padding left out).
    known = model.item_features.id_known.numpy() == 1
    known[0] = False
    for name in ("embeddings", "untied_output_embeddings", "output_bias"):
        old = getattr(model.item_embedding, name).numpy()
        rows = getattr(new.item_embedding, name).numpy()
        np.testing.assert_array_equal(rows[:n], old)
        mean = old[known].mean(axis=0)
        np.testing.assert_allclose(rows[n:], [mean, mean], rtol=1e-6)
    probability = new.candidate_probability.numpy()
    np.testing.assert_array_equal(
        probability[:n], model.candidate_probability.numpy()
    )
    assert probability[n:].tolist() == [0.0, 0.0]


def test_an_sse_graph_gets_no_edges_for_new_items():
    model = feature_model(sse_item_probability=0.2, item_graph=[[1, 2], [2, 3]])
    new = extend_catalogue(model, ITEMS, SPECS, new_table()).model
    old = model.item_sse.graph_indptr.numpy()
    indptr = new.item_sse.graph_indptr.numpy()
    assert indptr.tolist() == old.tolist() + [old[-1]] * 2
    np.testing.assert_array_equal(
        new.item_sse.graph_indices.numpy(), model.item_sse.graph_indices
    )


@pytest.mark.parametrize(
    "options, fragment",
    [
        ({"head": "mos", "mos_components": 2}, "head='mos'"),
        (
            {"head": "cpr", "cpr_reranker_ks": (3,)},
            "cpr_reranker_ks=(3,)",
        ),
    ],
)
def test_heads_that_score_against_the_catalogue_are_refused(options, fragment):
    model = feature_model(**options)
    with pytest.raises(ValueError, match="--add-items cannot") as error:
        extend_catalogue(model, ITEMS, SPECS, new_table())
    assert fragment in str(error.value)


def test_a_model_without_item_features_is_refused():
    config = ModelConfig(num_items=len(ITEMS), max_len=4)
    with pytest.raises(ValueError, match=re.escape("item_features=()")):
        check_extensible(config)


@pytest.mark.parametrize(
    "kinds, rows, fragment",
    [
        (
            {"genres": "token_seq", "color": "token", "price": "float"},
            {"x": {}},
            "reads the item feature year:float, but the file has no such "
            "column",
        ),
        (
            {**KINDS, "year": "float_seq"},
            {"x": {}},
            "trained with year:float, but the file has year:float_seq",
        ),
        (KINDS, {"a": {}, "b": {"color": "red"}}, "adds no item"),
    ],
    ids=["missing-feature", "other-kind", "no-new-item"],
)
def test_item_files_that_do_not_fit_are_refused(kinds, rows, fragment):
    table = new_table(rows, kinds)
    with pytest.raises(DataError, match="new.item") as error:
        extend_catalogue(feature_model(), ITEMS, SPECS, table)
    assert fragment in str(error.value)


def test_extra_columns_are_ignored():
    table = new_table(
        {"x": {"price": 3.0, "color": "blue"}}, {**KINDS, "price": "float"}
    )
    extended = extend_catalogue(feature_model(), ITEMS, SPECS, table)
    assert extended.added == ("x",)


def test_specs_that_disagree_with_the_model_are_refused():
    specs = [SPECS[0], SPECS[1], ItemFeatureSpec("color", "token", 1, ("r",))]
    with pytest.raises(ValueError, match="disagree") as error:
        extend_catalogue(feature_model(), ITEMS, specs, new_table())
    assert "Received: [('genres', 'token_seq', 5)" in str(error.value)


def test_feature_specs_file(tmp_path):
    path = tmp_path / "item_features.json"
    with pytest.raises(DataError, match="is missing"):
        load_feature_specs(str(path))
    path.write_text(json.dumps({"specs": []}))
    with pytest.raises(DataError, match="not a list of item feature specs"):
        load_feature_specs(str(path))
    path.write_text(json.dumps([s.to_dict() for s in SPECS]))
    assert load_feature_specs(str(path)) == SPECS


# ------------------------------------------------ trained runs, the CLI

# Items i1..i15 have interactions; i16..i20 only an attribute row (cold).
TRAINED = [f"i{j}" for j in range(1, 16)]
COLD = [f"i{j}" for j in range(16, 21)]
GENRES = ["Drama", "War", "Comedy", "Horror"]
HEADER = "item_id:token\tgenres:token_seq\tyear:float\tcolor:token\n"


def attributes(j):
    genres = " ".join(GENRES[k] for k in range(4) if (j >> k) & 1)
    return f"{genres}\t{1990 + j}\t{'red' if j % 2 else 'blue'}"


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """A run with item features, one without, and their data files."""
    from tfrec_tricks.training.run_training import train
    from tfrec_tricks.training.train_config import TrainConfig

    root = tmp_path_factory.mktemp("add-items")
    rng = np.random.default_rng(0)
    interactions = root / "x.txt"
    with open(interactions, "w") as handle:
        for user in range(40):
            for item in rng.choice(TRAINED, rng.integers(4, 9)):
                handle.write(f"u{user} {item}\n")
    items = root / "x.item"
    items.write_text(
        HEADER
        + "".join(
            f"{item}\t{attributes(j)}\n"
            for j, item in enumerate(TRAINED + COLD, start=1)
        )
    )
    common = dict(
        data="file",
        data_path=str(interactions),
        file_format="sasrec",
        max_len=6,
        epochs=1,
        output_dir=str(root / "runs"),
        model={"embedding_dim": 8},
    )
    features = train(
        TrainConfig(name="features", item_features=str(items), **common),
        verbose=0,
    ).run_dir
    plain = train(TrainConfig(name="plain", **common), verbose=0).run_dir
    return {"features": features, "plain": plain, "root": root}


def write_item_file(folder, text, name="new.item"):
    path = folder / name
    path.write_text(text)
    return str(path)


# Loads each version in a process where tfrec_tricks cannot be imported
# (as TF Serving) and answers every request with both signatures.
CLIENT = (
    BLOCK_PACKAGE_PREAMBLE
    + r"""
import json

import tensorflow as tf

requests_path, output_path, *versions = sys.argv[1:]
with open(requests_path) as handle:
    requests = json.load(handle)
answers = {}
for version in versions:
    loaded = tf.saved_model.load(version)
    top = loaded.signatures["serving_default"]
    score = loaded.signatures["score_candidates"]
    rows = []
    for history in requests["histories"]:
        history = tf.constant([history])
        served = top(history=history)
        scores = score(
            history=history,
            candidate_ids=tf.constant([requests["candidates"]]),
        )["scores"]
        rows.append(
            {
                "item_ids": served["item_ids"].numpy()[0].astype(str).tolist(),
                "scores": scores.numpy()[0].tolist(),
            }
        )
    answers[version] = rows
json.dump(answers, open(output_path, "w"))
"""
)


def serve(tmp_path, histories, candidates, *versions):
    requests = tmp_path / "requests.json"
    requests.write_text(
        json.dumps({"histories": histories, "candidates": candidates})
    )
    output = tmp_path / "answers.json"
    result = subprocess.run(
        [sys.executable, "-c", CLIENT, str(requests), str(output)]
        + [str(v) for v in versions],
        cwd=tmp_path,  # the working tree's package is not on sys.path
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    answers = json.loads(output.read_text())
    return [answers[str(v)] for v in versions]


@pytest.mark.slow
def test_added_items_are_served_and_old_scores_are_kept(runs, tmp_path, capsys):
    from tfrec_tricks.cli import main

    run_dir = runs["features"]
    items = json.loads(open(os.path.join(run_dir, "vocabulary.json")).read())
    old_items = items["items"]
    assert old_items[-len(COLD) :] == COLD  # cold items joined at the end
    base = tmp_path / "served"
    export = ["export", run_dir, "--name", "m", "--base-path", str(base)]
    assert main([*export, "--k", str(len(old_items) - 1)]) == 0
    # i3 is listed again with other attributes: kept as trained. "twin"
    # copies the cold i20's attributes, "odd" has unknown tokens.
    new_file = write_item_file(
        tmp_path,
        HEADER
        + "i3\tHorror\t1900\tgreen\n"
        + f"twin\t{attributes(20)}\n"
        + "odd\tSciFi Drama War Comedy Horror\t\tpurple\n",
    )
    k = len(old_items) + 1
    assert main([*export, "--add-items", new_file, "--k", str(k)]) == 0
    out = capsys.readouterr().out
    assert f"Added 2 items of {new_file} (20 -> 22 items)" in out
    assert "left as trained: 1 of its items" in out
    # Each version records the run's model; version 2 what it added to it.
    identity = ModelIdentity.of_run(run_dir, check_finished_run(run_dir))
    assert read_identity(str(base / "m/1")) == identity
    assert read_identity(str(base / "m/2")) == identity.with_added_items(
        new_file, 2
    )

    candidates = old_items[1:] + ["twin", "odd"]
    histories = [
        [""],
        ["i1", "i2", "i3"],
        ["i20", "i7", "i7", "", "no-such-item"],
        ["i1", "twin"],
        ["i1", "i20"],
        ["odd"],
    ]
    old, new = serve(
        tmp_path, histories, candidates, base / "m/1", base / "m/2"
    )
    n = len(old_items) - 1
    for row in range(3):
        # Old items: the same scores; new items unknown to version 1.
        np.testing.assert_allclose(
            new[row]["scores"][:n], old[row]["scores"][:n], atol=1e-5
        )
        assert old[row]["scores"][n:] == [pytest.approx(-1e9)] * 2
        # The full list holds the new items, the old ones in their order.
        assert sorted(new[row]["item_ids"]) == sorted(candidates)
        kept = [i for i in new[row]["item_ids"] if i not in ("twin", "odd")]
        assert kept == old[row]["item_ids"]
        # The twin of a cold item scores as that item.
        twin, i20 = new[row]["scores"][n], new[row]["scores"][n - 1]
        assert twin == pytest.approx(i20, abs=1e-5)
    # A history may hold a new item: the twin reads as i20 does.
    np.testing.assert_allclose(new[3]["scores"], new[4]["scores"], atol=1e-5)
    assert not np.allclose(new[5]["scores"], new[0]["scores"])
    np.testing.assert_allclose(old[5]["scores"], old[0]["scores"])


@pytest.mark.slow
def test_refusals_through_the_cli_write_nothing(runs, tmp_path, capsys):
    from tfrec_tricks.cli import main

    folder = tmp_path / "files"
    folder.mkdir()
    good = f"twin\t{attributes(20)}\n"
    cases = [
        (
            runs["plain"],
            write_item_file(folder, HEADER + good, "plain.item"),
            ["--add-items needs a model trained with item features"],
        ),
        (
            runs["features"],
            write_item_file(
                folder,
                "item_id:token\tgenres:token_seq\tcolor:token\tx:float\n"
                "new\tDrama\tred\t1\n",
                "missing.item",
            ),
            ["missing.item", "year:float, but the file has no such column"],
        ),
        (
            runs["features"],
            write_item_file(
                folder,
                "item_id:token\tgenres:token\tyear:float\tcolor:token\n"
                "new\tDrama\t1990\tred\n",
                "kind.item",
            ),
            ["kind.item", "genres:token_seq, but the file has genres:token"],
        ),
        (
            runs["features"],
            write_item_file(
                folder, HEADER + good + "bad\tDrama\n", "broken.item"
            ),
            [f"{folder / 'broken.item'}:3: expected 4 tab-separated fields"],
        ),
        (
            runs["features"],
            write_item_file(
                folder,
                HEADER + "i1\tWar\t1990\tred\ni16\t\t\t\n",
                "known.item",
            ),
            ["known.item adds no item", "keep their trained attributes"],
        ),
    ]
    for run_dir, item_file, fragments in cases:
        before = snapshot(tmp_path)
        argv = ["export", run_dir, "--name", "m", "--add-items", item_file]
        assert main([*argv, "--base-path", str(tmp_path / "served")]) == 1
        error = capsys.readouterr().err
        assert "Traceback" not in error
        for fragment in fragments:
            assert fragment in error, error
        assert snapshot(tmp_path) == before
    assert not (tmp_path / "served").exists()


@pytest.mark.slow
def test_a_refusal_exits_1_in_a_fresh_process(runs, tmp_path):
    item_file = write_item_file(tmp_path, HEADER + "i2\tWar\t1990\tred\n")
    result = run_cli(
        "export",
        runs["features"],
        "--name",
        "m",
        "--base-path",
        str(tmp_path / "served"),
        "--add-items",
        item_file,
    )
    assert_clean_error(result, f"{item_file} adds no item")
    assert not (tmp_path / "served").exists()


def test_a_per_item_weight_of_unknown_meaning_is_refused():
    from types import SimpleNamespace

    from tfrec_tricks.export.catalogue_extension import _copy_weights

    def fake(n):
        return SimpleNamespace(
            name="m",
            config=SimpleNamespace(num_items=n),
            weights=[tf.Variable(tf.zeros([n], tf.int32), name="counts")],
            item_features=SimpleNamespace(id_known=tf.Variable(tf.ones([n]))),
        )

    with pytest.raises(ValueError, match="extend the weight 'counts:0'"):
        _copy_weights(fake(3), fake(5), {})
