"""How well a model ranks: the protocols the toolkit reports.

- ``full_ranking``: NDCG@K, HR@K and MRR@K of each target among the whole
  catalogue (the toolkit's protocol), with the streaming Keras metric
  ``RankingMetric`` and the metrics by target kind (repeat or new item).
- ``sampled_ranking``: the papers' protocol of 100 sampled negatives
  (SASRec, SSE-PT), not comparable with full ranking.
"""
