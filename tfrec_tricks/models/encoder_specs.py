"""The built-in encoders' specs: GRU4Rec, SASRec and HSTU.

Registered in this order, the order of ``--encoder``'s choices. Their
layers (``gru4rec_encoder``, ``sasrec_encoder``, ``hstu_encoder``)
register themselves for ``build``; this module imports no TensorFlow.
"""

from typing import Any

from tfrec_tricks.models.encoder_registry import EncoderSpec, register_encoder


@register_encoder
class GRU4RecSpec(EncoderSpec):
    name = "gru4rec"
    summary = "stacked GRUs (Hidasi et al. 2016)"
    searched = True

    def parameters(self, config: Any, width: int) -> int:
        count, inputs = 0, config.embedding_dim
        for _ in range(config.num_layers):
            # A GRU layer: three gates, input and recurrent kernels.
            count += 3 * (inputs * width + width * width + 2 * width)
            inputs = width
        return count


class _AttentionSpec(EncoderSpec):
    attention = True

    def parameters(self, config: Any, width: int) -> int:
        # Positions and the input projection, then the blocks.
        count = config.max_len * width
        if width != config.embedding_dim:
            count += config.embedding_dim * width
        return count + config.num_layers * self.block_parameters(config, width)

    def block_parameters(self, config: Any, width: int) -> int:
        raise NotImplementedError


@register_encoder
class SASRecSpec(_AttentionSpec):
    name = "sasrec"
    summary = "self-attention blocks (Kang and McAuley 2018)"
    searched = True
    # Its softmax copies from the history by itself (docs/decisions.md
    # #head-auto): --head auto needs no CPR for it.
    copies_history = True
    settings = ("ffn_dim", "sasrec_norm")
    later_options = {"sasrec_norm": "post"}

    def block_parameters(self, config: Any, width: int) -> int:
        # Attention and the feed-forward network.
        ffn = config.ffn_dim or width
        return 4 * width * width + 2 * width * ffn


@register_encoder
class HSTUSpec(_AttentionSpec):
    name = "hstu"
    summary = "pointwise-attention blocks (Zhai et al. 2024)"
    # Left out of the default search until measured beside the others.
    searched = False

    def block_parameters(self, config: Any, width: int) -> int:
        # u, v, q, k, its output and a relative bias.
        return 5 * width * width + config.max_len
