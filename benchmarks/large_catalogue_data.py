"""The large-catalogue benchmark's random interactions file.

``--users`` users of at least ``MIN_LENGTH`` interactions each; every item
occurs once, the other fresh interactions draw items of Zipf popularity,
and a share of the interactions repeat one of the user's last
``REPEAT_WINDOW`` items (``benchmarks.large_catalogue`` writes it with
``write_interactions``, a chunk of users at a time).
"""

import os

import numpy as np

#: Every user's fewest interactions (a training, validation and test
#: example each, and some history).
MIN_LENGTH = 5
#: A repeat copies one of the user's last this many items.
REPEAT_WINDOW = 10
#: Users written to the file at a time.
USERS_PER_CHUNK = 20_000
#: Seconds between a user's interactions.
GAP_SECONDS = 60


def user_lengths(
    rng: np.random.Generator, interactions: int, users: int
) -> np.ndarray:
    """Interactions per user: at least ``MIN_LENGTH``, ``interactions`` in all.

    Beyond ``MIN_LENGTH`` each, the interactions fall on users uniformly
    (a multinomial: about Poisson lengths).

    Raises:
        ValueError: fewer than ``MIN_LENGTH`` interactions per user.
    """
    spare = interactions - MIN_LENGTH * users
    if users < 1 or spare < 0:
        raise ValueError(
            f"Every user needs at least {MIN_LENGTH} interactions. Received: "
            f"interactions={interactions}, users={users}"
        )
    extra = rng.multinomial(spare, np.full(users, 1.0 / users))
    return (MIN_LENGTH + extra).astype(np.int64)


def item_pool(
    rng: np.random.Generator, count: int, items: int, exponent: float = 1.0
) -> np.ndarray:
    """``count`` item ids in 1..``items`` in random order: the fresh draws.

    Each item once (a random ``count`` of them when ``count < items``),
    then draws of Zipf popularity (the r-th most popular item, ids
    shuffled, with probability ~ ``r ** -exponent``). So every item occurs
    and the popularity has a head and a long tail.
    """
    ids = rng.permutation(items).astype(np.int32) + 1
    once = ids[: min(count, items)]
    popularity = np.cumsum(
        np.arange(1, items + 1, dtype=np.float64) ** -exponent
    )
    popularity /= popularity[-1]
    ranks = np.searchsorted(popularity, rng.random(count - len(once)))
    drawn = ids[np.minimum(ranks, items - 1)]
    return rng.permutation(np.concatenate([once, drawn]))


def item_sequences(
    rng: np.random.Generator,
    lengths: np.ndarray,
    items: int,
    repeat_probability: float,
    exponent: float = 1.0,
) -> np.ndarray:
    """The users' items, user after user: int32 ``[sum(lengths)]``.

    A user's interaction is, with ``repeat_probability`` (never the first),
    a copy of one of their last ``REPEAT_WINDOW`` items, else the next
    fresh item of ``item_pool``.
    """
    total = int(lengths.sum())
    starts = np.cumsum(lengths) - lengths
    repeats = rng.random(total) < repeat_probability
    repeats[starts] = False
    sequence = np.zeros(total, np.int32)
    sequence[~repeats] = item_pool(rng, int((~repeats).sum()), items, exponent)
    # Position by position, over every user at once: a copy reads an
    # earlier position, already final.
    for position in range(1, int(lengths.max())):
        at = starts[lengths > position] + position
        at = at[repeats[at]]
        back = rng.integers(1, min(position, REPEAT_WINDOW) + 1, len(at))
        sequence[at] = sequence[at - back]
    return sequence


def write_interactions(
    path: str,
    interactions: int,
    users: int,
    items: int,
    repeat_probability: float,
    seed: int = 0,
) -> dict:
    """Writes the random ``udata`` file (see the module doc).

    Written a chunk of users at a time, under a temporary name renamed
    when complete.

    Returns:
        ``{"interactions", "users", "items"}``: the file's counts (items:
        distinct items that occur).
    """
    rng = np.random.default_rng(seed)
    lengths = user_lengths(rng, interactions, users)
    sequence = item_sequences(rng, lengths, items, repeat_probability)
    ratings = rng.integers(1, 6, len(sequence))
    user_start = 1_000_000_000 + rng.integers(0, 30 * 86400, users)
    ends = np.cumsum(lengths)
    partial = path + ".part"
    with open(partial, "w") as handle:
        for first in range(0, users, USERS_PER_CHUNK):
            last = min(first + USERS_PER_CHUNK, users)
            begin, end = ends[first] - lengths[first], ends[last - 1]
            chunk = lengths[first:last]
            user = np.repeat(np.arange(first + 1, last + 1), chunk)
            position = np.arange(end - begin) - np.repeat(
                np.cumsum(chunk) - chunk, chunk
            )
            stamp = np.repeat(user_start[first:last], chunk)
            stamp = stamp + GAP_SECONDS * position
            handle.write(
                "".join(
                    f"{u}\t{i}\t{r}\t{t}\n"
                    for u, i, r, t in zip(
                        user.tolist(),
                        sequence[begin:end].tolist(),
                        ratings[begin:end].tolist(),
                        stamp.tolist(),
                    )
                )
            )
    os.replace(partial, path)
    return {
        "interactions": int(len(sequence)),
        "users": int(users),
        "items": int(len(np.unique(sequence))),
    }
