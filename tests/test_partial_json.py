"""Streamed tool arguments as the widget sees them: every prefix of nasty model output parses, and never goes backwards."""

from __future__ import annotations

import pytest

from pi_jupyter.providers import StreamingJson, parse_streaming_json

NASTY = [
    # raw newlines and tabs inside a string (models emit them), an invalid escape, a Windows path
    ('{"path": "C:\\dir\\sub.py", "code": "def f():\n\treturn 1\n"}', {"path": "C:\\dir\\sub.py", "code": "def f():\n\treturn 1\n"}),
    # an emoji as a surrogate pair, split anywhere
    ('{"text": "ok \\ud83d\\ude00 done"}', {"text": "ok \U0001f600 done"}),
    # escapes of every kind, and nesting
    ('{"a": {"b": ["x\\"y", "\\\\", "\\u00e9"]}, "n": -12.5e3, "t": true, "f": false, "z": null}', None),
]


def _prefix_of(partial, final):
    """``partial`` only ever lacks what has not arrived yet: strings are prefixes, containers subsets."""
    if isinstance(final, dict):
        return isinstance(partial, dict) and all(k in final and _prefix_of(v, final[k]) for k, v in partial.items())
    if isinstance(final, list):
        if not isinstance(partial, list) or len(partial) > len(final):
            return False
        return all(_prefix_of(p, f) for p, f in zip(partial, final[: len(partial)], strict=True))
    if isinstance(final, str):
        return isinstance(partial, str) and final.startswith(partial)
    if isinstance(final, (int, float)) and not isinstance(final, bool):
        return isinstance(partial, (int, float)) and not isinstance(partial, bool)  # "-1" of "-12.5e3" is provisional
    return partial == final


@pytest.mark.parametrize(("text", "expected"), NASTY)
def test_every_prefix_parses_to_part_of_the_final_arguments(text, expected):
    import json

    final = expected if expected is not None else json.loads(text)
    acc = StreamingJson()
    for i, ch in enumerate(text):
        acc.feed(ch)
        partial = acc.parse()
        assert _prefix_of(partial, final), f"after {text[: i + 1]!r}: {partial!r}"
    assert acc.parse() == final


def test_a_literal_reads_as_itself_once_it_is_unambiguous_but_not_inside_a_string():
    assert parse_streaming_json('{"ok": fa') == {"ok": False}
    assert parse_streaming_json('{"ok": [nu') == {"ok": [None]}
    assert parse_streaming_json('{"note": "a, tr') == {"note": "a, tr"}  # text, not the literal true


@pytest.mark.parametrize("text", ['{"a": 1}}', "{'a': 1}", '{"a" 1}', "\x00", '{"a": [1, 2}'])
def test_broken_json_is_an_empty_dict_never_an_exception(text):
    assert isinstance(parse_streaming_json(text), dict)
