"""A family's registry: names in registration order, refusals, a live
view of the names."""

import pytest

from tfrec_tricks.family_registry import Registry


def test_names_are_live_and_in_registration_order():
    shapes = Registry("shape")
    names = shapes.names("any")

    @shapes.register
    class Square:
        name = "square"
        round = False

    @shapes.register
    class Circle:
        name = "circle"
        round = True

    assert tuple(names) == ("square", "circle", "any")
    assert shapes.where("round") == ("circle",)
    shapes.unregister("square")
    assert tuple(names) == ("circle", "any") and len(names) == 2
    assert "square" not in names and "any" in names


def test_refusals_name_what_was_received():
    shapes = Registry("shape")

    class Nameless:
        name = ""

    with pytest.raises(ValueError, match=r"A shape spec needs a name. "
                       r"Received: Nameless.name=''"):  # fmt: skip
        shapes.register(Nameless)

    @shapes.register
    class Circle:
        name = "circle"

    class Other:
        name = "circle"

    with pytest.raises(ValueError, match="taken by Circle. Received: Other"):
        shapes.register(Other)
    shapes.register(Circle)  # the same class again: no error
    with pytest.raises(ValueError, match=r"Received: shape='oval'"):
        shapes.get("oval")
