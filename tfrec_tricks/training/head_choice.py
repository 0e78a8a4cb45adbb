"""``--head auto``: the output head chosen from the training data.

``auto`` is a training run's default: a ``TrainConfig`` whose model names
no head (``tfrec-tricks train`` without ``--head``: ``ModelOptions.head``
is ``auto``) gets one from its data. A ``ModelConfig`` is one model and
defaults to ``softmax``.

Whether the next item repeats one the user had before decides which head
pays, and the training data says how often it does: the share of training
targets whose item is earlier in the user's sequence
(``TrainingStatistics.repeat_share``). The thresholds and the measurements
behind them: docs/decisions.md#head-auto.

- Below ``FEW_REPEATS`` (ml-1m: none) the history is ranked last
  (``softmax_no_dup``): it cannot lose more than that share of the hits,
  and on ml-1m it lifted GRU4Rec's test NDCG@10 from 0.0999 to 0.1449.
  The paper's CPR scored 4.8% more there at 4.4 times the epoch time: the
  rule takes the cheap head until CPR's step costs about a softmax's.
- From ``MANY_REPEATS`` on (yoochoose-100k and retailrocket sessions,
  about a third of the clicks go back), Softmax-CPR with its base loss
  beats the softmax with GRU4Rec; with SASRec the softmax is as good or
  better, since its attention copies by itself.
- Between, the plain softmax: no dataset measured there. CPR's repeat gain
  and its loss on new items break even near 4% repeats, so it takes
  ``MANY_REPEATS`` to choose it.
"""

import dataclasses
from collections.abc import Mapping
from typing import Any

from tfrec_tricks.config_fields import field_default
from tfrec_tricks.data.training_statistics import TrainingStatistics
from tfrec_tricks.errors import DataError
from tfrec_tricks.models.config import AUTO_HEAD, ENCODERS, ModelConfig
from tfrec_tricks.models.encoder_registry import encoder_spec
from tfrec_tricks.training.train_config import TrainConfig

#: Below this share of repeat targets the history is ranked last.
FEW_REPEATS = 0.01
#: From this share on, an encoder that does not copy by itself gets CPR.
MANY_REPEATS = 0.05
# Encoders whose softmax copies from the history as well as CPR does say
# so in their spec (``EncoderSpec.copies_history``: SASRec).


@dataclasses.dataclass(frozen=True)
class HeadChoice:
    """The head ``--head auto`` chose, and why.

    Attributes:
        head: str. A ``ModelConfig.head``.
        repeat_share: float. The training targets' repeat share it read.
        reason: str. One sentence for the run's log.
    """

    head: str
    repeat_share: float
    reason: str


def choose_head(repeat_share: float, encoder: str) -> HeadChoice:
    """The head for data with ``repeat_share`` of repeat targets.

    Args:
        repeat_share: float in [0, 1]. Share of training targets whose item
            the user had before.
        encoder: str. The model's encoder (``ModelConfig.encoder``).

    Returns:
        A ``HeadChoice``.

    Raises:
        ValueError: ``repeat_share`` is not in [0, 1].

    Example:

    >>> choose_head(0.0, "gru4rec").head
    'softmax_no_dup'
    >>> choose_head(0.34, "gru4rec").head
    'cpr'
    >>> choose_head(0.34, "sasrec").head
    'softmax'
    >>> choose_head(0.03, "gru4rec").head
    'softmax'
    """
    if not 0.0 <= repeat_share <= 1.0:
        raise ValueError(
            "The repeat share is a fraction of the training targets, in "
            f"[0, 1]. Received: repeat_share={repeat_share!r}"
        )
    share = (
        f"{repeat_share:.1%} of the training targets repeat an item of "
        "their history"
    )
    if repeat_share < FEW_REPEATS:
        return HeadChoice(
            "softmax_no_dup",
            repeat_share,
            f"{share} (below {FEW_REPEATS:.0%}): the history is ranked last",
        )
    if repeat_share < MANY_REPEATS:
        return HeadChoice(
            "softmax",
            repeat_share,
            f"{share} ({FEW_REPEATS:.0%} to {MANY_REPEATS:.0%}): the plain "
            "softmax",
        )
    if encoder in ENCODERS and encoder_spec(encoder).copies_history:
        return HeadChoice(
            "softmax",
            repeat_share,
            f"{share}; {encoder}'s softmax copies from the history as well "
            "as Softmax-CPR does",
        )
    return HeadChoice(
        "cpr",
        repeat_share,
        f"{share} (at least {MANY_REPEATS:.0%}): Softmax-CPR, which "
        "learns when to repeat",
    )


def head_for_data(
    model: Mapping[str, Any], statistics: TrainingStatistics, num_items: int
) -> HeadChoice:
    """The head ``auto`` chooses for ``model``'s settings on this data.

    Args:
        model: a run's model settings (``TrainConfig.model``, or a
            search's fixed settings): its encoder and reranker sizes, or
            ``ModelConfig``'s defaults.
        statistics: the training data's ``TrainingStatistics``.
        num_items: int. The catalogue's size, padding included.

    Returns:
        A ``HeadChoice``: ``choose_head``'s, or the plain softmax when the
        catalogue is smaller than CPR's largest reranker.

    Raises:
        DataError: the data does not record its repeat share (a dataset
            prepared by an earlier version).
    """
    share = statistics.repeat_share
    if share is None:
        raise DataError(
            "--head auto chooses the head from the share of training "
            "targets that repeat an item of their history, which this "
            "prepared dataset (written by an earlier version) does not "
            "record: run `tfrec-tricks prepare` again, or pass --head."
        )
    # A search's fixed settings hold training options too (batch_size):
    # only the two model fields are read.
    encoder = model.get("encoder", field_default(ModelConfig, "encoder"))
    choice = choose_head(share, encoder)
    ks = model.get(
        "cpr_reranker_ks", field_default(ModelConfig, "cpr_reranker_ks")
    )
    ks = ks or ()
    if choice.head == "cpr" and max(ks, default=0) > num_items - 1:
        choice = HeadChoice(
            "softmax",
            share,
            f"{choice.reason}, but the catalogue's {num_items - 1} items "
            f"are fewer than its reranker's {max(ks)}: the plain softmax",
        )
    return choice


def with_chosen_head(
    config: TrainConfig, statistics: TrainingStatistics, num_items: int
) -> tuple[TrainConfig, HeadChoice | None]:
    """``config`` with ``--head auto`` (or no head) replaced by the head
    for its data (``head_for_data``).

    Args:
        config: the run's ``TrainConfig``.
        statistics: its training data's ``TrainingStatistics``.
        num_items: int. The catalogue's size, padding included.

    Returns:
        ``(config, choice)``: ``config`` unchanged and None when it names
        its head, else the config with the chosen head and the choice.

    Raises:
        DataError: the data does not record its repeat share (a dataset
            prepared by an earlier version).
    """
    if config.model.head != AUTO_HEAD:
        return config, None
    choice = head_for_data(config.model, statistics, num_items)
    chosen = dataclasses.replace(
        config, model=config.model.with_values(head=choice.head)
    )
    return chosen, choice
