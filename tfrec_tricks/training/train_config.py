"""``TrainConfig``: a training run's data, budget and output settings."""

import copy
import dataclasses
import os
from typing import Any

from tfrec_tricks.config_fields import (
    check_choices,
    check_fields,
    document_fields,
    option,
)
from tfrec_tricks.data.in_memory_dataset import SPLITS, check_split
from tfrec_tricks.data.sources.loaders import FORMATS
from tfrec_tricks.data.sources.named_sources import DATA_ENV, SOURCES
from tfrec_tricks.models.config import ModelConfig
from tfrec_tricks.training.model_options import ModelOptions
from tfrec_tricks.training.option_choices import (
    DISTRIBUTE_MODES,
    LR_SCHEDULES,
    OPTIMIZERS,
)
from tfrec_tricks.training.run_directory import check_run_name

#: The learning rate of a run that gives none: Adam's usual 1e-3 for prefix
#: rows, 5e-3 for training windows, whose epochs have about 40x fewer
#: optimizer steps: at 1e-3 early stopping ends them on a plateau
#: (docs/decisions.md#learning-rate).
LEARNING_RATE = 1e-3
WINDOWS_LEARNING_RATE = 5e-3


def default_learning_rate(train_windows: bool) -> float:
    """The learning rate of a run that gives none (``LEARNING_RATE``, or
    ``WINDOWS_LEARNING_RATE`` with training windows)."""
    return WINDOWS_LEARNING_RATE if train_windows else LEARNING_RATE


@document_fields
@dataclasses.dataclass
class TrainConfig:
    """A training run's data, budget and model settings (JSON-serialisable).

    Every field is also a flag of ``tfrec-tricks train`` (``data_path`` is
    ``--data-path``); ``model`` holds the ``ModelConfig`` fields the run
    sets (``ModelOptions``; a dict is taken as one), the rest of the model
    keeps ``ModelConfig``'s defaults.

    Example:

    >>> config = TrainConfig(epochs=5, model={"head": "cpr"})
    >>> config.run_name, config.model_config(num_items=500).head
    ('synthetic', 'cpr')
    """

    data: str = option(
        "synthetic",
        "data source: synthetic, ml-1m, ml-1m-timed, ml-100k, "
        "yoochoose-100k, tfds:movielens/1m-ratings, "
        "tfds:movielens/100k-ratings or file (see above).",
        group="data",
        choices=SOURCES,
        metavar="SOURCE",
    )
    data_path: str | None = option(
        None,
        "folder of the real datasets (default: $" + DATA_ENV + ", else "
        "../shared/data), or the file for --data file.",
        group="data",
        metavar="PATH",
    )
    file_format: str = option(
        "auto",
        "format of --data file; auto guesses it from the first line.",
        group="data",
        flag="--format",
        choices=("auto", *FORMATS),
    )
    # Dropped: a row logged twice adds a repeat that never happened
    # (docs/decisions.md#drop-duplicates).
    drop_duplicates: bool = option(
        True,
        "drop the rows of interaction files with timestamps that repeat an "
        "earlier row exactly (same user or session, item, time and every "
        "other field: a double-logged event or a corrupt copy); they are "
        "counted and reported either way. --no-drop-duplicates keeps them, "
        "as RecBole does (yoochoose-100k has one).",
        group="data",
    )
    tfds_data_dir: str | None = option(
        None,
        "TFDS data_dir holding the prepared dataset.",
        group="data",
        metavar="DIR",
    )
    tfds_manual_dir: str | None = option(
        None,
        "folder with GroupLens' ml-1m.zip / ml-100k.zip.",
        group="data",
        metavar="DIR",
    )
    prepared: str | None = option(
        None,
        "train on a dataset `tfrec-tricks prepare --output DIR` wrote, "
        "streamed from disk (its data and preparation options are used; "
        "the other data flags must not contradict them).",
        group="data",
        metavar="DIR",
    )
    item_features: str | None = option(
        None,
        "item attributes in RecBole's atomic .item format: a header of "
        "name:type fields (item_id:token, then any of token, token_seq, "
        "float, float_seq), a tab-separated row per item. Items with a "
        "row but no interaction join the catalogue as cold-start items. "
        "The features it holds are taken unless --features names some. "
        "`prepare` encodes them into the prepared dataset; `train "
        "--prepared` reads them from it.",
        group="data",
        metavar="FILE",
    )
    min_feature_count: int = option(
        1,
        "a token of an item feature held by fewer training items is "
        "out-of-vocabulary (shares one embedding).",
        check="positive",
        group="data",
        metavar="N",
    )
    synthetic_users: int = option(
        1000, "synthetic users.", check="positive", group="data", metavar="N"
    )
    synthetic_items: int = option(
        1000, "synthetic items.", check="positive", group="data", metavar="N"
    )
    min_user_interactions: int = option(
        1,
        "drop users/sessions with fewer interactions (--split every-user "
        "raises it to 3); 1 keeps all, as RecBole.",
        check="positive",
        group="data",
        metavar="N",
    )
    min_item_interactions: int = option(
        0,
        "drop items with fewer interactions.",
        check="non_negative",
        group="data",
        metavar="N",
    )
    # RecBole's, to compare with RecBole (docs/decisions.md#split).
    split: str = option(
        "recbole",
        "leave-one-out split. recbole: each user's last example is the "
        "test example (users with 3+ interactions), the one before it the "
        "validation example (4+), the rest train, as RecBole 1.2.1. "
        "every-user: users with 3+ interactions only, each giving a "
        "validation and a test example.",
        group="data",
        choices=tuple(SPLITS),
    )
    # RecBole's protocol; no other length measured
    # (docs/decisions.md#max-len).
    max_len: int = option(
        50, "history length.", check="positive", group="data", metavar="L"
    )
    epochs: int = option(
        20,
        "maximum epochs (early stopping on validation NDCG@10 may stop "
        "sooner).",
        check="positive",
        group="training",
    )
    batch_size: int = option(128, "", check="positive", group="training")
    learning_rate: float | None = option(
        None,
        "the optimizer's learning rate (Adagrad wants a larger one, e.g. "
        "0.1 as in TFRS's examples).",
        check="positive",
        group="training",
        default_text="0.001; 0.005 with --train-windows (measured: its "
        "epochs have ~40x fewer steps)",
    )
    # A measured lever of the ml-1m recipe's budget
    # (benchmarks/results/ml-1m-long-histories).
    lr_schedule: str = option(
        "constant",
        "constant: the learning rate throughout. cosine: decayed to 0 "
        "along half a cosine that ends after --epochs epochs, so --epochs "
        "is the run's budget, not only a cap (early stopping still "
        "applies).",
        choices=LR_SCHEDULES,
        group="training",
    )
    warmup_epochs: int = option(
        0,
        "epochs over which the learning rate first rises linearly from 0 "
        "(either schedule).",
        check="non_negative",
        group="training",
        metavar="E",
    )
    # adagrad (with the sampled objective) for million-item catalogues:
    # docs/decisions.md#large-catalogues.
    optimizer: str = option(
        "adam",
        "adam: Keras' Adam, the papers' choice; its update decays the "
        "moments of the whole item table every step, so a step costs "
        "O(items x d): 3.4 s at 1M items here. adagrad: Keras' Adagrad "
        "(TFRS's examples' choice), whose update touches only the rows of "
        "the batch (20 ms per step at 1M items, sampled objective): for "
        "large catalogues.",
        choices=tuple(OPTIMIZERS),
        group="training",
    )
    patience: int = option(
        3,
        "epochs without a better validation NDCG@10 before stopping.",
        check="positive",
        group="training",
    )
    # Speed only (docs/decisions.md#speed-defaults).
    bucket_by_length: bool = option(
        True,
        "batch histories of similar length together, so that short "
        "sessions skip the padding columns (same examples per epoch, "
        "faster).",
        group="training",
    )
    every_position: bool = option(
        False,
        "train each session's prefixes in one row with a target per "
        "position: the encoder runs once per session instead of once per "
        "prefix (the same examples, losses and gradients; only the random "
        "draws of dropout and SSE differ; --batch-size then counts target "
        "positions). Pays off for SASRec on sessions longer than two "
        "items; GRU4Rec's loop costs per time step.",
        group="training",
    )
    train_windows: bool = option(
        False,
        "train on windows of L (--max-len) items of each user's training "
        "sequence with a target at every position, as SASRec and SSE-PT "
        "do, instead of one row per target (RecBole's prefixes): the "
        "encoder runs once per window, not once per target, so long "
        "histories (MovieLens) train many times faster. Every target is "
        "still trained once per epoch, but early positions of a window see "
        "shorter histories than their prefix rows would. --batch-size then "
        "counts windows. Validation and test are unchanged.",
        group="training",
    )
    # Non-overlapping, the papers' protocol, though stride 25 scores higher
    # on ml-1m: docs/decisions.md#window-stride.
    window_stride: int = option(
        0,
        "with --train-windows, targets between the ends of consecutive "
        "windows, 1..L. 0: L, non-overlapping windows. A smaller stride "
        "gives early positions longer histories at L/S times the rows (1: "
        "the prefix pairs, as --every-position). On ml-1m, S = L/2 scored "
        "6-9 percent higher than 0 at convergence, in the same minutes.",
        group="training",
        metavar="S",
    )
    # Speed only (docs/decisions.md#speed-defaults).
    steps_per_execution: int = option(
        16,
        "training steps per compiled call (Keras' compile option; the "
        "progress bar moves S steps at a time); 1 when an epoch holds "
        "fewer than S steps.",
        check="positive",
        group="training",
        metavar="S",
    )
    seed: int = option(0, "", group="training")
    eval_negatives: int = option(
        0,
        "also rank each validation and test target against N sampled "
        "items the user had not interacted with before it (uniform, "
        "seeded: SASRec's and SSE-PT's protocol, e.g. 100 on MovieLens-1M)"
        " and report those metrics beside the full ranking. They are NOT "
        "comparable with full ranking (much higher). 0: off. The negatives "
        "are distinct, so a sampled rank is never worse than the full "
        "rank: N at or above the catalogue's number of items is refused, "
        "and a user with N or fewer items left besides those seen is "
        "ranked against all of them (train prints how many).",
        check="non_negative",
        group="training",
        metavar="N",
    )
    eval_seen_excluded: bool = option(
        False,
        "also rank each validation and test target with every item its user "
        "interacted with before it ranked last (their whole history, not "
        "only the last --max-len items), as SASRec+, HSTU and RecBole's "
        "full-sort evaluation do on data without repeats, and report those "
        "metrics beside the plain full ranking. A target that repeats a "
        "seen item then ranks last: for data without repeats (MovieLens). "
        "With a head that ranks the history last (softmax_no_dup), also "
        "the plain ranking of its weights, nothing excluded "
        "(validation_history_kept, test_history_kept). The test metrics "
        "are also split by how many users the target item had in "
        "training (test_seen_excluded_by_popularity: 0, 1-9, 10-99, "
        "100-999, 1000+), where gains on the long tail show.",
        group="training",
    )
    distribute: str = option(
        "auto",
        "tf.distribute strategy. auto: MultiWorkerMirroredStrategy when "
        "TF_CONFIG names several workers (each reads its own shards; the "
        "chief writes the run directory), else one device. mirrored: "
        "MirroredStrategy over every local device (GPUs). off: one device.",
        group="training",
        choices=DISTRIBUTE_MODES,
    )
    output_dir: str = option(
        "runs", "parent folder of run directories.", group="output"
    )
    name: str | None = option(
        None,
        "run directory name, one folder name inside OUTPUT_DIR (no '/' "
        "or '..').",
        group="output",
        default_text="the data source name",
        validate=check_run_name,
    )
    model: ModelOptions = option(
        {},
        "the ModelConfig fields the run sets (the model flags set them).",
        cli=False,
    )

    def __post_init__(self):
        if not isinstance(self.model, ModelOptions):
            self.model = ModelOptions(self.model)
        check_fields(self)
        # What the flags' choices refuse, refused from a file or Python too.
        check_choices(self)
        if self.name is not None:
            check_run_name(self.name)
        check_split(self.split)
        self.training_window_stride()
        if self.lr_schedule not in LR_SCHEDULES:
            raise ValueError(
                f"lr_schedule must be one of {LR_SCHEDULES}. Received: "
                f"lr_schedule={self.lr_schedule!r}"
            )
        if self.warmup_epochs >= self.epochs:
            raise ValueError(
                "warmup_epochs must be less than epochs: the warmup must "
                "leave epochs to train at the rate. Received: "
                f"warmup_epochs={self.warmup_epochs}, epochs={self.epochs}"
            )

    def training_window_stride(self) -> int | None:
        """The stride of ``train_windows`` (None: prefix rows).

        Raises:
            ValueError: a stride outside ``0 .. max_len``, a stride without
                ``train_windows``, or ``train_windows`` with
                ``every_position``.
        """
        if self.train_windows and self.every_position:
            raise ValueError(
                "train_windows and every_position are two training "
                "protocols; choose one. Received: train_windows=True, "
                "every_position=True"
            )
        if not 0 <= self.window_stride <= self.max_len:
            raise ValueError(
                f"window_stride must be in 0..max_len={self.max_len} (0: "
                f"max_len). Received: window_stride={self.window_stride}"
            )
        if self.window_stride and not self.train_windows:
            raise ValueError(
                "window_stride applies to train_windows only. Received: "
                f"window_stride={self.window_stride}, train_windows=False"
            )
        if not self.train_windows:
            return None
        return self.window_stride or self.max_len

    @property
    def run_name(self) -> str:
        """``name``, or one made from the data source's (or prepared
        dataset's) name."""
        if self.name:
            return self.name
        if self.prepared:
            return os.path.basename(os.path.normpath(self.prepared))
        return self.data.replace(":", "-").replace("/", "-")

    def model_config(self, num_items: int, data: Any = None) -> ModelConfig:
        """The run's resolved ``ModelConfig`` for a catalogue of ``num_items``.

        ``model`` overrides the defaults; ``max_len`` and the learning rate
        (``training_learning_rate``) come from the training options,
        ``num_items`` from the data, and with the prepared ``data`` the
        features it selects (``ModelOptions.resolve``).

        Raises:
            ValueError: an invalid model config, or options the catalogue
                cannot serve (``check_catalogue``).
        """
        self.check_catalogue(num_items)
        return self.model.resolve(
            num_items, self.max_len, self.training_learning_rate(), data
        )

    def to_dict(self) -> dict:
        """The fields as JSON values, in order (``config.json``'s
        ``train``; ``model`` as the plain dict of the fields it sets)."""
        values = {
            field.name: copy.deepcopy(getattr(self, field.name))
            for field in dataclasses.fields(self)
        }
        values["model"] = self.model.to_dict()
        return values

    def check_catalogue(self, num_items: int) -> None:
        """Refuses ``eval_negatives`` at or above the catalogue's real
        items (``num_items - 1``): there are not that many distinct items
        to draw, so sampling would only repeat them.

        >>> TrainConfig(eval_negatives=100).check_catalogue(41)
        Traceback (most recent call last):
        ...
        ValueError: --eval-negatives 100 is at or above the catalogue's 40 \
items; ...
        """
        items = num_items - 1
        if self.eval_negatives and self.eval_negatives >= items:
            raise ValueError(
                f"--eval-negatives {self.eval_negatives} is at or above the "
                f"catalogue's {items} items; sampled negatives must be "
                f"fewer (at most {items - 1}), or leave --eval-negatives "
                "out: the full ranking ranks every item. Received: "
                f"eval_negatives={self.eval_negatives}, num_items={num_items}"
            )

    def training_learning_rate(self) -> float:
        """``learning_rate``, or the protocol's default when it is None
        (``default_learning_rate``)."""
        if self.learning_rate is not None:
            return float(self.learning_rate)
        return default_learning_rate(self.train_windows)
