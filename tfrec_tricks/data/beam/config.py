"""The checked options of a Beam preparation (``prepare_with_beam``).

Example:

>>> config = BeamConfig.from_options(
...     {"max_len": 5, "split": "every-user"}, num_shards=None,
...     filter_rounds=FILTER_ROUNDS)
>>> config.num_shards, config.min_user, config.drop_duplicates
(4, 3, True)
"""

from tfrec_tricks.data.item_features.encoding import check_min_count
from tfrec_tricks.data.user_sequences import SPLITS, check_split

# Shards when ``num_shards`` is not given: the interaction count that
# ``default_num_shards`` scales with is known only after the pipeline.
DEFAULT_NUM_SHARDS = 4
# Rounds of the k-core filter when both bounds are active.
FILTER_ROUNDS = 8


class BeamConfig:
    """The checked preparation options the pipeline needs.

    Args:
        max_len: int. The longest history of a training example.
        split: str. A key of ``user_sequences.SPLITS``.
        min_user: int. The k-core filter's user bound.
        min_item: int. The k-core filter's item bound.
        numeric_features: bool. Keep the time gap and numeric columns.
        num_shards: int. TFRecord shards to write.
        filter_rounds: int. Rounds of the k-core filter when both bounds
            are active.
        drop_duplicates: bool. Drop exact duplicate rows. Defaults to True.
        min_feature_count: int. A value of a token column held by fewer
            training interactions is out-of-vocabulary
            (``interaction_tokens``). Defaults to 1.
    """

    def __init__(
        self,
        max_len: int,
        split: str,
        min_user: int,
        min_item: int,
        numeric_features: bool,
        num_shards: int,
        filter_rounds: int,
        drop_duplicates: bool = True,
        min_feature_count: int = 1,
    ):
        self.max_len = max_len
        self.split = split
        self.min_user = min_user
        self.min_item = min_item
        self.numeric_features = numeric_features
        self.num_shards = num_shards
        self.filter_rounds = filter_rounds
        self.drop_duplicates = drop_duplicates
        self.min_feature_count = min_feature_count

    @classmethod
    def from_options(
        cls, options: dict, num_shards: int | None, filter_rounds: int
    ) -> "BeamConfig":
        """The config of ``prepare_with_beam``'s arguments.

        Args:
            options: dict. ``prepare_with_beam``'s options.
            num_shards: int or None (``DEFAULT_NUM_SHARDS``).
            filter_rounds: int. At least 1.

        Returns:
            A ``BeamConfig``. With the "every-user" split the user bound
            is raised to the split's minimum, as ``user_sequences`` does.

        Raises:
            ValueError: ``max_len`` is missing, or an option is out of
                range.
        """
        if "max_len" not in options:
            raise ValueError(
                "options must hold max_len. Received: options keys "
                f"{sorted(options)}"
            )
        split = options.get("split", "recbole")
        check_split(split)
        min_user = int(options.get("min_user_interactions", 1))
        if min_user < 1:
            raise ValueError(
                "min_user_interactions must be at least 1. Received: "
                f"min_user_interactions={min_user}"
            )
        if split == "every-user":
            min_user = max(min_user, SPLITS[split][0])
        num_shards = DEFAULT_NUM_SHARDS if num_shards is None else num_shards
        if num_shards <= 0:
            raise ValueError(
                f"num_shards must be positive. Received: {num_shards}"
            )
        if filter_rounds < 1:
            raise ValueError(
                "filter_rounds must be at least 1. Received: "
                f"filter_rounds={filter_rounds}"
            )
        min_feature_count = options.get("min_feature_count", 1)
        check_min_count(
            min_feature_count, "training interactions a value needs"
        )
        return cls(
            max_len=int(options["max_len"]),
            split=split,
            min_user=min_user,
            min_item=int(options.get("min_item_interactions", 0)),
            numeric_features=bool(options.get("numeric_features", True)),
            num_shards=num_shards,
            filter_rounds=filter_rounds,
            drop_duplicates=bool(options.get("drop_duplicates", True)),
            min_feature_count=int(min_feature_count),
        )
