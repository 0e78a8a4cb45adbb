"""The item features a search chooses among, and the data of each choice.

A search whose data has item attributes (``--item-features FILE``, or the
metadata of a built-in MovieLens dataset: ``movielens_item_features``)
chooses which of them the model fuses with the item ids
(``item_feature_set``) and how (``feature_fusion``). ``ItemFeatureSpace``
holds the attributes; each choice's data is the id-only data joined with
the chosen ones (``with_item_features``), as ``train`` joins them: the
cold-start items join the catalogue only when an attribute is used, so
that an id-only trial ranks the catalogue ``train`` ranks without them.

Example:

>>> from tfrec_tricks.data.item_features.item_file import ItemFeatureTable
>>> table = ItemFeatureTable(
...     {"genres": "token_seq", "year": "float"}, {}, "movies.item")
>>> space = ItemFeatureSpace(table, by_default=True)
>>> space.choices()
['none', 'genres', 'year', 'genres,year']
>>> space.default_choice()
'genres,year'
>>> space.split(["year", "time_gap"], ["time_gap"])
(('time_gap',), ('year',))
>>> space.split(["device", "year"], ["time_gap"], token_names=["device"])
(('device',), ('year',))
"""

import dataclasses
import os
from collections.abc import Sequence
from typing import Any

from tfrec_tricks.data.in_memory_item_features import with_item_features
from tfrec_tricks.data.item_features.item_file import (
    ItemFeatureTable,
    read_item_features,
)
from tfrec_tricks.data.item_features.movielens import (
    MOVIELENS_METADATA,
    metadata_files,
    movielens_item_features,
)
from tfrec_tricks.training.feature_selection import (
    ALL_FEATURES,
    select_features,
)
from tfrec_tricks.training.run_directory import data_identity
from tfrec_tricks.training.train_config import TrainConfig
from tfrec_tricks.tuning.hyperparameter_values import NONE
from tfrec_tricks.tuning.search_space import feature_choices


@dataclasses.dataclass(frozen=True)
class ItemFeatureSpace:
    """The item attributes a search chooses among.

    Attributes:
        table: ``ItemFeatureTable``. The attributes of the items, every
            feature of the file (or of the dataset's metadata).
        min_count: int. ``--min-feature-count``: a token held by fewer
            training items is out-of-vocabulary. Defaults to 1.
        by_default: bool. ``train`` fuses every feature when ``--features``
            names none (``--item-features`` was given), so the first
            trial does; else it fuses none (a built-in dataset's metadata
            is read only when named). Defaults to False.
        files: tuple of str. The files the attributes come from beyond the
            run's data files (a built-in dataset's metadata), identified
            in the search's fingerprint. Defaults to ().
    """

    table: ItemFeatureTable
    min_count: int = 1
    by_default: bool = False
    files: tuple[str, ...] = ()

    def names(self) -> list[str]:
        """The features, in file order."""
        return self.table.names()

    def choices(self) -> list[str]:
        """The ``item_feature_set`` values: none, each alone, all.

        Not every subset: n features have 2^n (a RecBole file with ten
        has 1,024, more than a search trains). Id-only is the baseline,
        each feature alone says which one carries the signal, all of them
        whether they add up: n + 2 choices (n + 1 for one feature), the
        same rule as the per-interaction ``features``. Any other subset
        is one ``--choices item_feature_set=...`` away.
        """
        return feature_choices(self.names())

    def default_choice(self) -> str:
        """The first trial's value: what ``train`` fuses without
        ``--features``."""
        return ",".join(self.names()) if self.by_default else NONE

    def split(
        self,
        requested: Sequence[str],
        position_names: Sequence[str],
        items_by_default: bool = False,
        token_names: Sequence[str] = (),
    ) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """``--features`` as the per-interaction and the item features it
        selects, as ``train`` reads it.

        Args:
            requested: the names given, possibly ``"all"``.
            position_names: the data's float per-interaction features.
            items_by_default: with nothing requested, every item feature.
                Defaults to False.
            token_names: the data's categorical per-interaction features
                (``token`` columns). Defaults to ().

        Returns:
            ``(position, item)``: the per-interaction features, float and
            token, in the order given (``all``: the floats, then the
            tokens, each in the data's order; ``ModelOptions.resolve``'s
            order), the item features in file order
            (``ItemFeatureTable.select``'s).

        Raises:
            ValueError: a name the data has of neither kind, or "all"
                beside names (``select_features``).
        """
        selection = select_features(
            requested,
            position_names,
            self.names(),
            items_by_default,
            token_available=token_names,
            item_source=self.table.source,
        )
        if ALL_FEATURES in requested:
            return (*selection.position, *selection.token), selection.item
        known = {*position_names, *token_names}
        position = tuple(name for name in requested if name in known)
        return position, selection.item

    def join(self, data: Any, names: Sequence[str]) -> Any:
        """The id-only ``data`` with the item features ``names``.

        Args:
            data: an ``InMemoryDataset`` without item features.
            names: the item features; empty: ``data`` itself.

        Returns:
            An ``InMemoryDataset`` (``with_item_features``).

        Raises:
            ValueError: a name the attributes do not have.
        """
        if not names:
            return data
        return with_item_features(
            data, self.table.select(list(names)), self.min_count
        )

    def fingerprint(self) -> dict:
        """What the search's fingerprint records of the space: the
        features, and the size and SHA-256 of the metadata files."""
        return {
            "names": self.names(),
            "files": data_identity(list(self.files)),
        }

    def train_options(
        self,
        search: TrainConfig,
        position_names: Sequence[str],
        position: Sequence[str],
        item: Sequence[str],
        token_names: Sequence[str] = (),
    ) -> tuple[tuple[str, ...], str | None]:
        """The ``--features`` and ``--item-features`` with which ``train``
        reads ``position`` and ``item``.

        The search's own ``--features`` when it selects them (the same
        configuration is then written alike: the selection compares
        configurations by their options); else the names, and no
        ``--item-features`` file for id-only training without
        per-interaction features (with one, ``train`` would fuse every
        attribute).

        Args:
            search: the search's ``TrainConfig``.
            position_names: the data's float per-interaction features.
            position: the per-interaction features to read (float and
                token).
            item: the item features to fuse.
            token_names: the data's categorical per-interaction features.
                Defaults to ().

        Returns:
            ``(features, item_features)``: the ``features`` model option
            and ``TrainConfig.item_features``.
        """
        given = tuple(search.model.value("features"))
        selected = self.split(
            given, position_names, search.item_features is not None, token_names
        )
        if selected == (tuple(position), tuple(item)):
            return given, search.item_features
        features = (*position, *item)
        return features, search.item_features if features else None


def search_item_features(config: TrainConfig) -> ItemFeatureSpace | None:
    """The item attributes a search of ``config`` chooses among.

    ``--item-features FILE`` (every feature by default, as ``train``), else
    the metadata of a built-in MovieLens dataset when it is in the data
    folder (none by default: ``train`` reads it only when ``--features``
    names it), else None. A file without features is None too.

    Raises:
        DataError: the file, or the metadata present, cannot be read
            (named ``file:line``).
    """
    if config.item_features is not None:
        table = read_item_features(config.item_features)
        space = ItemFeatureSpace(table, config.min_feature_count, True)
    elif config.data in MOVIELENS_METADATA:
        files = metadata_files(config.data, config.data_path)
        if not os.path.isfile(files[0]):
            return None
        table = movielens_item_features(config.data, config.data_path)
        space = ItemFeatureSpace(
            table, config.min_feature_count, False, tuple(files)
        )
    else:
        return None
    return space if space.names() else None
