"""The trained items of a Beam preparation, for its item features.

A prepared dataset's item features (``prepared.item_features``) are
encoded with vocabularies and statistics of the items of the training
examples, and the items of the ``.item`` table that are not in the
catalogue join it as cold items.

Design: the pipeline computes only what needs every user, the trained
items: each user's (``trained_item_ids``, the local engine's function),
made distinct across workers and gathered on one worker, as the item
ranking is; the driver reads them back from the side folder. The driver
then joins the item table exactly as the local engine does
(``join_item_features``): the same function on the same table, catalogue
and mask, so the feature vocabularies, the cold items, the values and the
statistics are byte-equal to the local engine's. The table has one row per
item and the driver already holds the item vocabulary (``vocabulary.json``
is read back); encoding on the workers instead would ship the table to
every worker as a side input and merge token counts and float moments
across them, whose sums (in another order) need not be bit-equal.

Example:

>>> import numpy as np
>>> user = (np.array([4, 2, 4, 7, 9]), {}, 3, 4)  # validation at 3
>>> sorted(user_trained_items(user))  # targets 2, 4 and history 4
[2, 4]
"""

import apache_beam as beam
import numpy as np

from tfrec_tricks.data.prepared.item_features import trained_item_ids
from tfrec_tricks.data.user_sequences import UserSequences


def trained_items(encoded: beam.PCollection):
    """A singleton PCollection: the sorted ids of the trained items.

    Args:
        encoded: PCollection of ``beam.ranking.encoded_users``' users.
    """
    return (
        encoded
        | "TrainedInputs" >> beam.Map(lambda user: user[1])
        | "UserTrainedItems" >> beam.FlatMap(user_trained_items)
        | "DistinctTrainedItems" >> beam.Distinct()
        | "AllTrainedItems" >> beam.combiners.ToList()
        | "SortTrainedItems" >> beam.Map(sorted)
    )


def user_trained_items(user: tuple) -> list[int]:
    """The items of one user's training examples.

    Args:
        user: ``(items, features, validation position, test position)``,
            what ``SummaryFn`` reads of an encoded user.

    Returns:
        list of int: contiguous ids, each once.
    """
    items, _, validation, test = user
    sequence = UserSequences(
        item_names=[],
        user_names=[],
        items=np.asarray(items),
        starts=np.zeros(1, np.int64),
        lengths=np.array([len(items)], np.int64),
        features={},
        validation_positions=np.array([validation], np.int64),
        test_positions=np.array([test], np.int64),
    )
    return trained_item_ids(sequence).tolist()
