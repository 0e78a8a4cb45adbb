"""The rows a Beam preparation passes around, and the columns they keep.

A row is a tuple: where it is in file order, then what it says,
``(file index, line, user, item, time, numeric, other)``; index it with
the constants below (``row[USER]``). Tuples, not objects, because Beam
pickles every row between steps.

Example:

>>> schema = file_schema([(0, True, ("price", "rating")),
...                       (1, True, ("rating",))])
>>> schema["numeric"], schema["slots"]
(['rating'], {0: [1], 1: [0]})
"""

FILE, LINE, USER, ITEM, TIME, NUMERIC, OTHER = range(7)


def file_schema(columns: list[tuple[int, bool, tuple[str, ...]]]) -> dict:
    """The kept columns of all files, as ``read_encoded`` keeps them.

    Args:
        columns: list of ``(file index, has timestamps, numeric column
            names)``, one per file.

    Returns:
        ``has_time``: every file has timestamps; ``numeric``: the numeric
        columns every file has, sorted; ``slots``: for each file index,
        where those columns are in its records' ``numeric``.
    """
    if not columns:
        return {"has_time": False, "numeric": [], "slots": {}}
    names = sorted(set.intersection(*(set(c[2]) for c in columns)))
    return {
        "has_time": all(c[1] for c in columns),
        "numeric": names,
        "slots": {c[0]: [c[2].index(n) for n in names] for c in columns},
    }
