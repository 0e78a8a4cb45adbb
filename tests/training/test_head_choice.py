"""``--head auto``'s rule: the head from the training targets' repeat share."""

import json

import numpy as np
import pytest

from tfrec_tricks.cli.options import train_config
from tfrec_tricks.data.training_statistics import TrainingStatistics
from tfrec_tricks.errors import DataError
from tfrec_tricks.models.config import AUTO_HEAD
from tfrec_tricks.training.head_choice import (
    FEW_REPEATS,
    MANY_REPEATS,
    choose_head,
    with_chosen_head,
)
from tfrec_tricks.training.train_config import TrainConfig


@pytest.mark.parametrize(
    "share, encoder, head",
    [
        (0.0, "gru4rec", "softmax_no_dup"),  # ml-1m
        (0.0, "sasrec", "softmax_no_dup"),
        (FEW_REPEATS - 1e-9, "gru4rec", "softmax_no_dup"),
        (FEW_REPEATS, "gru4rec", "softmax"),
        (MANY_REPEATS - 1e-9, "gru4rec", "softmax"),
        (MANY_REPEATS, "gru4rec", "cpr"),
        (0.340, "gru4rec", "cpr"),  # yoochoose-100k
        (0.319, "gru4rec", "cpr"),  # retailrocket-sessions
        (0.340, "sasrec", "softmax"),
        (1.0, "gru4rec", "cpr"),
    ],
)
def test_the_head_follows_the_thresholds(share, encoder, head):
    choice = choose_head(share, encoder)
    assert choice.head == head
    assert choice.repeat_share == share
    assert f"{share:.1%} of the training targets repeat" in choice.reason


@pytest.mark.parametrize("share", [-0.1, 1.5, float("nan")])
def test_a_share_outside_zero_to_one_is_refused(share):
    with pytest.raises(ValueError, match=f"repeat_share={share!r}"):
        choose_head(share, "gru4rec")


def statistics(targets: int, repeats):
    counts = np.zeros(50, np.int64)
    counts[1] = targets
    return TrainingStatistics(counts, {}, repeats)


def test_an_explicit_head_is_kept_whatever_the_data():
    config = TrainConfig(model={"head": "mos"})
    chosen, choice = with_chosen_head(config, statistics(10, 0), 50)
    assert chosen is config and choice is None


@pytest.mark.parametrize(
    "model, repeats, head",
    [
        ({"head": "auto"}, 0, "softmax_no_dup"),
        ({"head": "auto", "cpr_reranker_ks": (20,)}, 4, "cpr"),
        ({"head": "auto", "encoder": "sasrec"}, 4, "softmax"),
        # The default reranker (100) does not fit 49 items.
        ({"head": "auto"}, 4, "softmax"),
    ],
)
def test_auto_is_replaced_by_the_chosen_head(model, repeats, head):
    config = TrainConfig(model=model, epochs=3)
    chosen, choice = with_chosen_head(config, statistics(10, repeats), 50)
    assert choice.head == head
    assert chosen.model == {**model, "head": head}
    assert chosen.epochs == 3
    chosen.model_config(50)  # a valid model


@pytest.mark.parametrize("repeats, head", [(0, "softmax_no_dup"), (4, "cpr")])
def test_a_run_that_names_no_head_chooses_it_from_its_data(repeats, head):
    config = TrainConfig(model={"cpr_reranker_ks": (20,)})
    chosen, choice = with_chosen_head(config, statistics(10, repeats), 50)
    assert choice.head == head
    assert chosen.model == {"cpr_reranker_ks": (20,), "head": head}


def test_the_cli_default_head_is_auto():
    from tfrec_tricks.cli.parser import build_parser, parse

    args = parse(build_parser(), ["train"])
    config = train_config(args)
    assert "head" not in config.model
    assert config.model.head == AUTO_HEAD


def test_auto_on_data_that_does_not_record_repeats_is_refused():
    config = TrainConfig(model={"head": "auto"})
    with pytest.raises(DataError, match="prepare` again, or pass --head"):
        with_chosen_head(config, statistics(10, None), 50)


def write_sessions(path, repeat: bool) -> None:
    """40 users of 12 interactions: all distinct, or every other a repeat."""
    lines = []
    for user in range(40):
        for t in range(12):
            item = user + t if not repeat or t % 2 == 0 else user + t - 1
            lines.append(f"u{user}\ti{item % 30}\t1\t{t}")
    path.write_text("\n".join(lines) + "\n")


@pytest.mark.slow
@pytest.mark.parametrize(
    "repeat, head, requested",
    [(False, "softmax_no_dup", {"head": "auto"}), (True, "cpr", {})],
)
def test_a_run_with_head_auto_trains_the_head_its_data_calls_for(
    tmp_path, repeat, head, requested
):
    from tfrec_tricks.training.run_training import train

    path = tmp_path / "u.data"
    write_sessions(path, repeat)
    config = TrainConfig(
        data="file",
        data_path=str(path),
        epochs=1,
        max_len=10,
        output_dir=str(tmp_path / "runs"),
        model={**requested, "embedding_dim": 8, "cpr_reranker_ks": (5,)},
    )
    result = train(config, verbose=0)
    settings = json.loads(
        (tmp_path / "runs" / "file" / "config.json").read_text()
    )
    assert settings["model"]["head"] == head
    assert settings["train"]["model"]["head"] == head
    assert settings["head_choice"]["requested"] == "auto"
    assert settings["head_choice"]["head"] == head
    share = settings["head_choice"]["repeat_share"]
    assert (share > 0.3) if repeat else (share == 0.0)
    assert result.model.config.head == head
    # The same request again finds the finished run.
    assert train(config, verbose=0).metrics == result.metrics
