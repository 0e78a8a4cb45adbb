"""Heads by name: registration, lookup, and the live list of names."""

import subprocess
import sys

import pytest

from tfrec_tricks.heads.registry import (
    HeadSpec,
    head_spec,
    register_head,
    registered_heads,
    unregister_head,
)


def test_a_registered_head_is_found_and_listed_until_removed():
    names = registered_heads("auto")

    @register_head
    class TinySpec(HeadSpec):
        name = "tiny_for_test"

    try:
        assert isinstance(head_spec("tiny_for_test"), TinySpec)
        assert "tiny_for_test" in names
        assert tuple(names)[-2:] == ("tiny_for_test", "auto")
    finally:
        unregister_head("tiny_for_test")
    assert "tiny_for_test" not in names
    with pytest.raises(ValueError, match="Received: head='tiny_for_test'"):
        head_spec("tiny_for_test")


def test_a_nameless_or_taken_name_is_refused():
    class Nameless(HeadSpec):
        pass

    with pytest.raises(ValueError, match=r"Received: Nameless.name=''"):
        register_head(Nameless)

    class Impostor(HeadSpec):
        name = "cpr"

    with pytest.raises(
        ValueError, match="taken by CPRSpec. Received: Impostor"
    ):
        register_head(Impostor)
    assert type(head_spec("cpr")).__name__ == "CPRSpec"


def test_a_spec_that_does_not_say_how_to_build_or_extend():
    class Unfinished(HeadSpec):
        name = "unfinished"

    with pytest.raises(NotImplementedError, match="Unfinished.build"):
        Unfinished().build(None, 8)

    class Config:
        head = "unfinished"

    assert "Received: head='unfinished'" in Unfinished().extension_refusal(
        Config()
    )


def test_the_names_are_read_without_tensorflow():
    code = (
        "import sys; from tfrec_tricks.heads.registry import "
        "registered_heads; print(list(registered_heads()), "
        "'tensorflow' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "['softmax', 'cpr', 'mos', 'softmax_no_dup'] False"
