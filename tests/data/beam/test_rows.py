"""The columns a Beam preparation keeps are those every file has."""

from tfrec_tricks.data.beam.rows import file_schema


def test_keeps_the_columns_every_file_has():
    schema = file_schema(
        [
            (1, True, ("rating", "price"), ("device", "channel")),
            (0, False, ("price", "rating"), ("page", "device")),
        ]
    )
    assert schema == {
        "has_time": False,
        "numeric": ["price", "rating"],
        "slots": {1: [1, 0], 0: [0, 1]},
        # As read_encoded: only the token columns every file has.
        "tokens": ["device"],
        "token_slots": {1: [0], 0: [1]},
    }


def test_no_files():
    assert file_schema([]) == {
        "has_time": False,
        "numeric": [],
        "slots": {},
        "tokens": [],
        "token_slots": {},
    }
