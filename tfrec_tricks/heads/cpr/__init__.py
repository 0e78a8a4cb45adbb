"""Softmax-CPR (Chang et al., 2024), the head and its parts.

* ``softmax_cpr``: the layer, `SoftmaxCPR` (what a model and a user call:
  its public methods are the `OutputHead` contract, nothing more);
* ``partitions``: the partitions' computations (the query, the context
  and pointer logits of the history, the reranker cascade, the
  catalogue's logits), `CPRPartitions`, an object the layer composes (it
  reads the layer's settings and sublayers, owns no weights) and hands to
  its ``call``, its loss and its candidate scoring;
* ``cpr_inputs``: `CPRInputs`, the tensors of one call (query, base
  projection, states, history, item table, bias, ``training``) as one
  frozen dataclass, built where a path reads its inputs;
* ``loss`` and ``partitioned_cross_entropy``: the training loss over the
  partitions, without the ``[B, N]`` logits;
* ``candidates``: scoring a candidate set exactly as ``call`` scores the
  catalogue (the serving index's path).

The layer is ``tfrec_tricks.heads.SoftmaxCPR`` (imported on first access);
this package imports nothing itself.
"""
