"""Stochastic shared embeddings: training-time replacement of ids."""

import random
from typing import Any

import numpy as np
import tensorflow as tf

from tfrec_tricks.layers.common import is_integer
from tfrec_tricks.serialization import register


def graph_to_csr(edges: Any, num_ids: int) -> tuple[np.ndarray, np.ndarray]:
    """Builds symmetric CSR adjacency arrays from an undirected edge list.

    Each edge ``(a, b)`` makes ``a`` a neighbour of ``b`` and ``b`` a
    neighbour of ``a``. Self-loops and duplicate edges are dropped.

    Args:
        edges: array-like of int, shape ``[E, 2]``. Ids in
            ``1 .. num_ids-1`` (id 0 is padding and has no neighbours).
        num_ids: int. Number of ids, padding included.

    Returns:
        ``(indptr, indices)``, int64 arrays of shapes ``[num_ids + 1]`` and
        ``[nnz]``: the neighbours of ``j`` are
        ``indices[indptr[j]:indptr[j + 1]]``, sorted.

    Example:

    >>> from tfrec_tricks.layers.stochastic_shared_embedding import (
    ...     graph_to_csr)
    >>> indptr, indices = graph_to_csr([[1, 2], [2, 3], [2, 1]], num_ids=4)
    >>> print(indptr.tolist(), indices.tolist())
    [0, 0, 1, 3, 4] [2, 1, 3, 2]
    """
    edges = np.asarray(edges, dtype=np.int64)
    if edges.size == 0:
        edges = edges.reshape(0, 2)
    if edges.ndim != 2 or edges.shape[1] != 2:
        raise ValueError(
            "`edges` must have shape [E, 2]. "
            f"Received: edges.shape={edges.shape}"
        )
    if edges.size and (edges.min() < 1 or edges.max() >= num_ids):
        raise ValueError(
            f"Edge ids must be in [1, {num_ids - 1}] (0 is padding). "
            f"Received: ids in [{edges.min()}, {edges.max()}]"
        )
    edges = edges[edges[:, 0] != edges[:, 1]]
    source = np.concatenate([edges[:, 0], edges[:, 1]])
    target = np.concatenate([edges[:, 1], edges[:, 0]])
    # One int64 key per directed edge: sorting the keys orders by (source,
    # target) with no N x N structure. Sort and drop repeats by hand:
    # np.unique is ~100x slower on millions of keys (NumPy 2.4).
    keys = np.sort(source * np.int64(num_ids) + target)
    first = np.ones(keys.size, dtype=bool)
    first[1:] = keys[1:] != keys[:-1]
    keys = keys[first]
    source, indices = np.divmod(keys, np.int64(num_ids))
    counts = np.bincount(source, minlength=num_ids)
    indptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    return indptr, indices.astype(np.int64)


def _graph_csr(graph: Any, num_ids: int) -> tuple[np.ndarray, np.ndarray]:
    # Accepts the graph formats documented on the layer; returns checked
    # CSR arrays.
    if isinstance(graph, dict):
        indptr, indices = graph["indptr"], graph["indices"]
    elif hasattr(graph, "indptr") and hasattr(graph, "indices"):
        indptr, indices = graph.indptr, graph.indices  # e.g. scipy CSR
    elif isinstance(graph, tuple):
        if len(graph) != 2:
            raise ValueError(
                "A tuple `graph` must be CSR `(indptr, indices)`. "
                f"Received: graph tuple of length {len(graph)}"
            )
        indptr, indices = graph
    else:
        return graph_to_csr(graph, num_ids)
    indptr = np.asarray(indptr, dtype=np.int64).ravel()
    indices = np.asarray(indices, dtype=np.int64).ravel()
    if indptr.shape != (num_ids + 1,):
        raise ValueError(
            f"CSR `indptr` must have shape [num_ids + 1] = [{num_ids + 1}]. "
            f"Received: indptr.shape={indptr.shape}"
        )
    if indptr[0] != 0 or indptr[-1] != indices.size:
        raise ValueError(
            "CSR `indptr` must start at 0 and end at len(indices) = "
            f"{indices.size}. Received: indptr[0]={indptr[0]}, "
            f"indptr[-1]={indptr[-1]}"
        )
    if np.any(np.diff(indptr) < 0):
        raise ValueError(
            "CSR `indptr` must be non-decreasing. Received: a decreasing indptr"
        )
    if indices.size and (indices.min() < 1 or indices.max() >= num_ids):
        raise ValueError(
            f"CSR `indices` must be in [1, {num_ids - 1}] (0 is padding). "
            f"Received: indices in [{indices.min()}, {indices.max()}]"
        )
    return indptr, indices


@register
class StochasticSharedEmbedding(tf.keras.layers.Layer):
    """Randomly replaces ids during training (SSE-SE and SSE-Graph).

    Put this layer on an int id tensor right before the embedding lookup.
    When ``training`` is true, each non-padding id is kept with probability
    ``1 - probability`` and otherwise replaced (SSE-SE) by an id drawn
    uniformly from ``1 .. num_ids-1``. Padding id 0 never changes and is
    never drawn. A replacement may draw the original id again, so the
    share of ids that change is ``probability * (1 - 1 / (num_ids - 1))``.
    When ``training`` is false the layer returns its input
    unchanged, with no random op in the graph, as keras' ``Dropout`` does,
    so an exported serving model is deterministic and carries none of it.

    SSE-Graph: with a ``graph`` over the ids, a replaced id ``j`` moves to
    a uniformly chosen neighbour with probability
    ``n_j (rho - 1) / (n_j (rho - 1) + N)`` (``n_j`` neighbours of ``j``,
    ``N = num_ids - 1`` real ids) and otherwise to a uniform id. This is the
    SSE-PT construction; with ``N`` the number of real ids it makes
    ``p(j, k) / p(j, l) = rho`` exactly for a neighbour ``k`` and a
    non-neighbour ``l`` of ``j`` (both other than ``j``).

    Applied to label ids, SSE-SE acts like label smoothing with
    ``epsilon ~= probability`` (the paper shows label smoothing is a
    special case). Reference values from SSE-PT: ``probability ~= 0.1`` on
    item ids (input sequence and labels), ``~= 0.92`` on user ids; SSE-MF
    used 0.005.

    Graph storage: the graph is kept as CSR arrays (``indptr`` of size
    ``num_ids + 1`` and ``indices`` of size ``num_edges``), never as a
    dense matrix, so a million ids work. They live in non-trainable int64
    weights created in ``build``, so checkpoints, ``.keras`` files,
    ``get_weights`` / ``set_weights`` and SavedModels carry them. The
    config stays small and JSON-safe: it records ``num_edges`` and
    ``graph: None``, never the arrays. ``from_config`` therefore builds
    zero-filled graph weights of the right shape that the saved weights
    then fill (``set_weights``, ``load_weights``, checkpoint restore).

    Randomness: stateless ops keyed by ``(seed, counter)``, where the
    counter is a non-trainable int64 weight incremented on every training
    call. The same seed gives the same sequence of replacements; repeated
    calls give new draws; restoring a checkpoint resumes the sequence.

    Args:
        num_ids: int. Number of ids, padding id 0 included; at least 2.
        probability: float. Replacement probability ``p0``, in
            ``[0, 1)``.
        graph: optional. An undirected edge list, array-like of shape
            ``[E, 2]``; or CSR adjacency as a tuple ``(indptr, indices)``,
            a dict with those keys, or an object with ``.indptr`` and
            ``.indices`` (e.g. a SciPy CSR matrix), taken as given (row
            ``j`` lists the neighbours of ``j``). Ids in
            ``1 .. num_ids-1``. Not stored in the config. Defaults to
            ``None`` (SSE-SE).
        rho: float. Neighbour-to-non-neighbour transition ratio, ``>= 1``;
            a tuning parameter, 1 makes the graph irrelevant. Defaults to
            ``10.0``.
        seed: int or None. Seed of the replacements. Defaults to ``None``
            (a random seed per layer instance).
        num_edges: int or None. Length of the CSR ``indices`` (twice the
            number of distinct undirected edges for an edge list). Computed
            from ``graph`` when given; set by ``from_config`` so that a
            graph layer can be rebuilt and then receive its weights.
            Defaults to ``None``.
        **kwargs: other keyword arguments of ``tf.keras.layers.Layer``.

    Call arguments:
        inputs: int tensor of ids, any shape, values in
            ``0 .. num_ids-1``.
        training: bool. Replace ids only when true. Defaults to ``None``
            (keras' learning phase: false outside ``fit``).

    Returns:
        An int tensor of the same shape and dtype as ``inputs``.

    Example:

    >>> import numpy as np
    >>> import tfrec_tricks.layers
    >>> sse = tfrec_tricks.layers.StochasticSharedEmbedding(
    ...     num_ids=1000, probability=0.1, seed=42)
    >>> ids = np.array([[3, 17, 0, 0], [5, 5, 9, 0]])
    >>> print(np.array_equal(sse(ids, training=False), ids))
    True
    >>> noisy = sse(ids, training=True).numpy()
    >>> print(noisy.shape, (noisy[ids == 0] == 0).all())
    (2, 4) True

    SSE-Graph with an edge list:

    >>> sse = tfrec_tricks.layers.StochasticSharedEmbedding(
    ...     num_ids=5, probability=0.5, graph=[[1, 2], [2, 3]], rho=20.0,
    ...     seed=1)
    >>> print(sse(ids % 5, training=True).shape, sse.num_edges)
    (2, 4) 4

    References:
        - [Wu et al., 2019](https://arxiv.org/abs/1905.10630): Stochastic
          shared embeddings: data-driven regularization of embedding
          layers.
        - [Wu et al., 2020](https://arxiv.org/abs/1908.05435): SSE-PT:
          sequential recommendation via personalized transformer.
    """

    def __init__(
        self,
        num_ids: int,
        probability: float,
        graph: Any = None,
        rho: float = 10.0,
        seed: int | None = None,
        num_edges: int | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if not is_integer(num_ids) or num_ids < 2:
            raise ValueError(
                "`num_ids` must be an int >= 2 (id 0 is padding). "
                f"Received: num_ids={num_ids}"
            )
        if not 0 <= probability < 1:
            raise ValueError(
                "`probability` must be in [0, 1). "
                f"Received: probability={probability}"
            )
        if not rho >= 1:
            raise ValueError(f"`rho` must be >= 1. Received: rho={rho}")
        if seed is not None and not is_integer(seed):
            raise ValueError(f"`seed` must be an int. Received: seed={seed}")
        self.num_ids = int(num_ids)
        self.probability = float(probability)
        self.graph = graph
        self.rho = float(rho)
        self.seed = seed if seed is None else int(seed)
        self._csr = None
        if graph is not None:
            self._csr = _graph_csr(graph, num_ids)
            size = int(self._csr[1].size)
            if num_edges is not None and num_edges != size:
                raise ValueError(
                    f"`num_edges` disagrees with `graph`, which has {size} "
                    f"CSR entries. Received: num_edges={num_edges}"
                )
            num_edges = size
        if num_edges is not None and (
            not is_integer(num_edges) or num_edges < 0
        ):
            raise ValueError(
                "`num_edges` must be an int >= 0. "
                f"Received: num_edges={num_edges}"
            )
        self.num_edges = num_edges if num_edges is None else int(num_edges)
        # Without a seed, draw one now so this instance's stream is fixed.
        self._seed_value = (
            self.seed if seed is not None else random.randrange(2**31 - 1)
        )
        self.supports_masking = True

    def build(self, input_shape: Any = None) -> None:
        self.seed_state = self.add_weight(
            name="seed_state",
            shape=(),
            dtype="int64",
            initializer="zeros",
            trainable=False,
        )
        self.graph_indptr = None
        self.graph_indices = None
        if self.num_edges is not None:
            if self._csr is None:
                # Rebuilt from a config: the weights are loaded afterwards.
                indptr_init, indices_init = "zeros", "zeros"
            else:
                indptr_init = _constant_initializer(self._csr[0])
                indices_init = _constant_initializer(self._csr[1])
            self.graph_indptr = self.add_weight(
                name="graph_indptr",
                shape=(self.num_ids + 1,),
                dtype="int64",
                initializer=indptr_init,
                trainable=False,
            )
            self.graph_indices = self.add_weight(
                name="graph_indices",
                shape=(self.num_edges,),
                dtype="int64",
                initializer=indices_init,
                trainable=False,
            )
            # The weights own the graph now; drop the host copy.
            self._csr = None
        self.built = True

    def call(self, inputs: Any, training: Any = None) -> tf.Tensor:
        if training is None or self.probability == 0:
            return inputs
        if isinstance(training, (bool, np.bool_)):
            return self._replace(inputs) if training else inputs
        # A symbolic learning phase (tf-keras): decide in the graph.
        return tf.cond(
            tf.cast(training, tf.bool),
            lambda: self._replace(inputs),
            lambda: tf.identity(inputs),
        )

    def _replace(self, inputs: Any) -> tf.Tensor:
        inputs = tf.convert_to_tensor(inputs)
        ids = tf.cast(inputs, tf.int64)
        shape = tf.shape(ids)
        self.seed_state.assign_add(1)
        counter = tf.convert_to_tensor(self.seed_state)
        seed = tf.constant(self._seed_value, tf.int64)
        # Two independent streams per call, keyed by the call counter.
        float_seed = tf.stack([seed, 2 * counter])
        int_seed = tf.stack([seed, 2 * counter + 1])
        uniforms = tf.random.stateless_uniform(
            tf.concat([[3], shape], 0), seed=float_seed
        )
        uniform_ids = tf.random.stateless_uniform(
            shape,
            seed=int_seed,
            minval=1,
            maxval=self.num_ids,
            dtype=tf.int64,
        )
        replace = tf.logical_and(
            uniforms[0] < self.probability, tf.not_equal(ids, 0)
        )
        candidates = uniform_ids
        if self.num_edges and self.rho > 1:
            candidates = self._graph_candidates(ids, uniforms, uniform_ids)
        outputs = tf.where(replace, candidates, ids)
        return tf.cast(outputs, inputs.dtype)

    def _graph_candidates(
        self, ids: tf.Tensor, uniforms: tf.Tensor, uniform_ids: tf.Tensor
    ) -> tf.Tensor:
        # Clip so out-of-range ids cannot make the gathers fail.
        rows = tf.clip_by_value(ids, 0, self.num_ids - 1)
        indptr = tf.convert_to_tensor(self.graph_indptr)
        start = tf.gather(indptr, rows)
        degree = tf.gather(indptr, rows + 1) - start
        weight = tf.cast(degree, tf.float32) * (self.rho - 1.0)
        to_neighbour = uniforms[1] < weight / (weight + (self.num_ids - 1))
        offset = tf.cast(
            tf.floor(uniforms[2] * tf.cast(degree, tf.float32)), tf.int64
        )
        offset = tf.minimum(offset, tf.maximum(degree - 1, 0))
        position = tf.clip_by_value(start + offset, 0, self.num_edges - 1)
        neighbours = tf.gather(self.graph_indices, position)
        return tf.where(to_neighbour, neighbours, uniform_ids)

    def compute_mask(self, inputs: Any, mask: Any = None) -> Any:
        return mask

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(
            {
                "num_ids": self.num_ids,
                "probability": self.probability,
                # The graph is in the weights; see the class docstring.
                "graph": None,
                "rho": self.rho,
                "seed": self.seed,
                "num_edges": self.num_edges,
            }
        )
        return config


def _constant_initializer(values: np.ndarray) -> Any:
    # An initializer returning fixed values: the weight is created with its
    # content, with no assign op that could land in a traced graph.
    def initializer(shape: Any, dtype: Any = None, **kwargs: Any) -> Any:
        return tf.constant(values, dtype=dtype or tf.int64)

    return initializer
