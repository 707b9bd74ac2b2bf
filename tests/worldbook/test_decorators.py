"""CCv3 decorators at the head of an entry's content (``nekoflow.worldbook.decorators``)."""

from __future__ import annotations

from nekoflow.worldbook.decorators import parse_decorators


def test_head_lines_are_cut_with_the_blank_lines_around_them() -> None:
    deco, body = parse_decorators(
        "\n@@depth 3\n@@role assistant\n\n正文\n@@depth 9 (not at the head)"
    )
    assert body == "正文\n@@depth 9 (not at the head)"
    assert deco.prefix == "\n@@depth 3\n@@role assistant\n\n"
    assert deco.fields == {"position": "at_depth", "depth": 3, "role": "assistant"}
    assert parse_decorators("plain @@depth 1") == (parse_decorators("")[0], "plain @@depth 1")


def test_the_spec_precedences() -> None:
    deco, _ = parse_decorators(
        "@@depth 2\n@@position before_desc\n@@dont_activate\n@@activate\n@@depth 5\nx"
    )
    assert deco.fields == {"position": "before_char", "always_on": True}
    assert dict(deco.ignored) == {
        "@@depth 5": "repeated: the first counts",
        "@@dont_activate": "@@activate is given",
        "@@depth 2": "@@position is given",
    }
    deco, _ = parse_decorators("@@depth -1\n@@scan_depth 0\nx")  # below 1: after the last message
    assert deco.fields == {"position": "at_depth", "depth": 0, "scan_depth": 0}


def test_fallbacks_are_tried_only_after_a_decorator_not_applied() -> None:
    deco, _ = parse_decorators("@@risu_only 4\n@@@agn_only 4\n@@@depth 1\n@@@depth 7\nx")
    assert deco.fields == {"position": "at_depth", "depth": 1}
    assert [line for line, _ in deco.ignored] == ["@@risu_only 4", "@@@agn_only 4"]
    deco, _ = parse_decorators("@@depth 1\n@@@depth 7\nx")  # the fallback of an applied one
    assert (deco.fields["depth"], deco.ignored) == (1, [])


def test_what_nekoflow_cannot_apply_is_named() -> None:
    deco, body = parse_decorators(
        "@@position personality\n@@role narrator\n@@depth soon\n@@exclude_keys a,b\n@@@ x\nbody"
    )
    assert body == "body" and deco.fields == {}
    assert dict(deco.ignored) == {
        "@@position personality": "position 'personality' has no place in nekoflow's prompt",
        "@@role narrator": "'narrator' is not system, user or assistant",
        "@@depth soon": "'soon' is not a number",
        "@@exclude_keys a,b": "not supported",
        "@@@ x": "not a decorator line",
    }


def test_an_edited_field_drops_the_decorator_that_set_it() -> None:
    deco, _ = parse_decorators("@@depth 0\n@@role user\n\nx")
    assert deco.without({"order"}) == (deco.prefix, set())
    assert deco.without({"depth"}) == ("@@role user\n\n", {"position", "depth"})
    assert deco.without({"depth", "role"}) == ("", {"position", "depth", "role"})
