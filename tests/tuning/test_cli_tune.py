"""`tfrec-tricks tune` options (the searches themselves: test_search.py)."""

import pytest

from tfrec_tricks.cli.parser import build_parser
from tfrec_tricks.tuning.search import parse_choices


def test_tune_options_and_defaults():
    args = build_parser().parse_args(
        ["tune", "--tuner", "hyperband", "--max-trials", "5", "--head", "cpr"]
    )
    assert (args.tuner, args.max_trials, args.head) == ("hyperband", 5, "cpr")
    # Tuned unless given; the search goes to tuning/, not runs/.
    assert args.batch_size is None and args.learning_rate is None
    assert args.output_dir == "tuning"
    assert not args.overwrite
    defaults = build_parser().parse_args(["tune"])
    assert (defaults.tuner, defaults.max_trials, defaults.max_minutes) == (
        "hyperband",
        None,
        None,
    )
    assert (defaults.retrain_top, defaults.seeds) == (3, 1)


@pytest.mark.parametrize(
    "flag, value, message",
    [
        ("--max-minutes", "0", "must be positive, got 0.0"),
        ("--retrain-top", "-1", "must be >= 0, got -1"),
        ("--seeds", "0", "must be positive, got 0"),
    ],
)
def test_bad_search_options_are_rejected(flag, value, message, capsys):
    with pytest.raises(SystemExit):
        build_parser().parse_args(["tune", flag, value])
    assert message in capsys.readouterr().err


def test_unknown_tuner_is_rejected(capsys):
    with pytest.raises(SystemExit):
        build_parser().parse_args(["tune", "--tuner", "grid"])
    assert "invalid choice" in capsys.readouterr().err


def test_parse_choices():
    hp = parse_choices(
        [
            "embedding_dim=16,32",
            "dropout=0.1,0.3",
            "cpr_mi=true,false",
            "head=softmax,cpr",
            "cpr_reranker_ks=none;20;20,100",
        ]
    )
    space = {h.name: h.values for h in hp.space}
    assert space == {
        "embedding_dim": [16, 32],
        "dropout": [0.1, 0.3],
        "cpr_mi": [True, False],
        "head": ["softmax", "cpr"],
        "cpr_reranker_ks": ["none", "20", "20,100"],
    }
    assert parse_choices(None) is None
    with pytest.raises(ValueError, match="NAME=V1,V2"):
        parse_choices(["embedding_dim"])


@pytest.mark.parametrize(
    "item, message",
    [
        ("learning_rate=0.001,inf", "learning_rate=inf"),
        ("learning_rate=Infinity,0.1", "learning_rate=inf"),
        ("learning_rate=1e39,0.1", "learning_rate=1e+39"),
        ("dropout=NaN,0.1", "dropout=nan"),
        ("cpr_reranker_ks=none;20,1e39", "cpr_reranker_ks=1e+39"),
    ],
)
def test_parse_choices_refuses_non_finite_values(item, message):
    with pytest.raises(ValueError, match="finite number") as error:
        parse_choices([item])
    assert message in str(error.value) and repr(item) in str(error.value)


def test_parse_choices_reads_numbers_and_refuses_a_name_twice():
    hp = parse_choices(["dropout=.5,0.1", "head=softmax,cpr"])
    assert [h.values for h in hp.space] == [[0.5, 0.1], ["softmax", "cpr"]]
    with pytest.raises(ValueError, match="dropout is given twice"):
        parse_choices(["dropout=0.1,0.2", "dropout=0.3,0.4"])
