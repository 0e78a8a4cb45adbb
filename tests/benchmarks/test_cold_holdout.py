"""cold_holdout: which occurrences of a held-out item go, which users."""

from benchmarks import cold_holdout


def test_a_user_whose_held_out_item_would_train_is_dropped():
    held = {"x"}
    # 5 items left: training positions 0..2 hold no x.
    assert cold_holdout.hold_out_sequence(list("axbcdx"), held) == list("abcdx")
    # Left with a x x: no validation target (fewer than 4 items), so the
    # x at position 1 is a training target.
    assert cold_holdout.hold_out_sequence(list("axx"), held) is None
    assert cold_holdout.hold_out_sequence(list("ab"), {"b"}) is None
    assert cold_holdout.hold_out_sequence(list("a"), {"a"}) == ["a"]
    result = cold_holdout.hold_out(
        [("u1", list("abcdef")), ("u2", list("ab"))], share=0.5, seed=0
    )
    assert len(result.held) == 3
    assert result.dropped_users + len(result.sequences) == 2
