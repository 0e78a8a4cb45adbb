"""Offline recommendations: a finished run's top-k lists for many users.

``recommend_frame(run_dir, k=10)`` (and ``tfrec-tricks recommend RUN_DIR
--output recs.csv``) ranks items for every user of the run's data with
their whole history, or for new users' histories, through the served
model's code (``tfrec_tricks.export.ServingModule``): a row per (user,
rank), raw ids. One module per part:

- ``id_lists``: the users, allowed and denied items, checked by
  ``file:line``;
- ``user_histories``, ``run_data``, ``history_frames``: users' whole
  histories, from the run's data (in memory or prepared on disk) or a
  table of new histories;
- ``local_engine``: the ``ServingModule`` in ``tf.function`` s, and the
  filters (seen items, allow- and deny-lists);
- ``writers``: CSV, JSON Lines and Parquet files, written a batch at a
  time and published whole;
- ``beam_engine``, ``beam_model_handler``: ``--engine beam``, the
  exported SavedModel in an Apache Beam pipeline (``RunInference``),
  writing sharded output;
- ``job``: ``RecommendationJob``, the checks and the stream of batches
  the command line and ``recommend_frame`` share;
- ``served_run``: a run's parts held between calls (``RunMemory``), read
  again when its files change: what ``Recommender.recommend`` answers
  from.

It sits beside ``tfrec_tricks.tuning``, above ``training`` (it reads run
directories and their data). ``job``'s names are imported on first
access: ``writers`` and ``id_lists`` are read without TensorFlow.
"""

from typing import TYPE_CHECKING

from tfrec_tricks.lazy_exports import lazy_exports

if TYPE_CHECKING:
    from tfrec_tricks.recommendation.job import (
        RecommendationJob,
        RecommendationOptions,
        recommend_frame,
    )

__all__ = ["RecommendationJob", "RecommendationOptions", "recommend_frame"]


# ``job`` imports TensorFlow, and ``tfrec-tricks recommend`` checks its
# output file and id lists (``writers``, ``id_lists``) before TensorFlow
# loads.
__getattr__, __dir__ = lazy_exports(
    __name__, globals(), dict.fromkeys(__all__, "job")
)
