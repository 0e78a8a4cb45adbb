"""Keras layers of tfrec_tricks; each works under tf-keras and Keras 3."""

from tfrec_tricks.layers.mixture_of_softmax import MixtureOfSoftmax
from tfrec_tricks.layers.soft_one_hot_encoding import SoftOneHotEncoding
from tfrec_tricks.layers.softmax_cpr import SoftmaxCPR
from tfrec_tricks.layers.stochastic_shared_embedding import (
    StochasticSharedEmbedding,
)
from tfrec_tricks.layers.tied_item_embedding import TiedItemEmbedding
from tfrec_tricks.layers.tied_softmax import TiedSoftmax

__all__ = [
    "MixtureOfSoftmax",
    "SoftOneHotEncoding",
    "SoftmaxCPR",
    "StochasticSharedEmbedding",
    "TiedItemEmbedding",
    "TiedSoftmax",
]
