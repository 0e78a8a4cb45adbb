"""The rows a Beam preparation passes around, and the columns they keep.

A row is a tuple: where it is in file order, then what it says,
``(file index, line, user, item, time, numeric, other, tokens)``; index it
with the constants below (``row[USER]``). Tuples, not objects, because
Beam pickles every row between steps.

Example:

>>> schema = file_schema([(0, True, ("price", "rating"), ("device",)),
...                       (1, True, ("rating",), ("channel", "device"))])
>>> schema["numeric"], schema["slots"]
(['rating'], {0: [1], 1: [0]})
>>> schema["tokens"], schema["token_slots"]
(['device'], {0: [0], 1: [1]})
"""

FILE, LINE, USER, ITEM, TIME, NUMERIC, OTHER, TOKENS = range(8)


def file_schema(
    columns: list[tuple[int, bool, tuple[str, ...], tuple[str, ...]]],
) -> dict:
    """The kept columns of all files, as ``read_encoded`` keeps them.

    Args:
        columns: list of ``(file index, has timestamps, numeric column
            names, token column names)``, one per file.

    Returns:
        ``has_time``: every file has timestamps; ``numeric``: the numeric
        columns every file has, sorted; ``slots``: for each file index,
        where those columns are in its records' ``numeric``; ``tokens``
        and ``token_slots``: likewise for the token columns (a record's
        ``tokens``).
    """
    if not columns:
        return {
            "has_time": False,
            "numeric": [],
            "slots": {},
            "tokens": [],
            "token_slots": {},
        }
    names = sorted(set.intersection(*(set(c[2]) for c in columns)))
    tokens = sorted(set.intersection(*(set(c[3]) for c in columns)))
    return {
        "has_time": all(c[1] for c in columns),
        "numeric": names,
        "slots": {c[0]: [c[2].index(n) for n in names] for c in columns},
        "tokens": tokens,
        "token_slots": {c[0]: [c[3].index(n) for n in tokens] for c in columns},
    }
