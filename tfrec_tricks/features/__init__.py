"""Item attributes as Keras layers: the fused item table.

A sequential recommender that knows only item ids cannot say anything
about an item it never saw in training, and learns rare items slowly. This
package turns each item's attributes (categorical ids such as a brand or
genres; numbers such as a price) into vectors and fuses them with the item
id embeddings into one item table, used both to embed the model's inputs
and to score items (tied output):

- `CategoricalFeatureEmbedding`: the mean embedding of a row of ids;
- `FeatureFusion`: ``"concat"`` (Dense projection of the concatenation) or
  ``"sum"`` of the id embedding and the feature vectors (``FUSION_MODES``);
- `ItemFeatureEncoder`: the whole catalogue at once: holds every item's
  values, encodes them (`CategoricalFeatureEmbedding`, and
  ``tfrec_tricks.layers.SoftOneHotEncoding`` for numbers), gives cold-start
  items the mean id row and fuses; a training step that reads only some
  items fuses only their rows (``fuse_rows``, ``fusion_step``: an
  ``item_fusion.ItemFusion``).

Like ``tfrec_tricks.layers``, these layers work under tf-keras and Keras 3.
"""

from tfrec_tricks.features.categorical_feature_embedding import (
    CategoricalFeatureEmbedding,
)
from tfrec_tricks.features.feature_fusion import FUSION_MODES, FeatureFusion
from tfrec_tricks.features.item_feature_encoder import ItemFeatureEncoder

__all__ = [
    "FUSION_MODES",
    "CategoricalFeatureEmbedding",
    "FeatureFusion",
    "ItemFeatureEncoder",
]
