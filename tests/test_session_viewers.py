"""``s.graph()`` and ``s.compare()`` work for a user while the store knows nothing of the views."""

from __future__ import annotations

import subprocess
import sys

import pytest

from pi_jupyter.session import SessionError, viewers


def test_graph_and_compare_from_a_plain_import_load_the_views_only_when_asked():
    script = """
import sys
from pi_jupyter import Session
s = Session.in_memory()
s.append_message({"role": "user", "content": "hi", "timestamp": 1})
s.checkout(None)
s.append_message({"role": "user", "content": "hello", "timestamp": 2})  # a sibling branch
print("views" if "pi_jupyter.views" in sys.modules else "no views")
graph = s.graph()
print(type(graph).__name__, "pi_jupyter.views" in sys.modules)
print(type(s.compare()).__name__)
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout.split("\n")
    assert out[0] == "no views"  # opening and appending do not pay for the views
    assert out[1].split() == ["SessionGraph", "True"]
    assert out[2] == "Comparison"


def test_a_view_nobody_provided_is_a_clear_error():
    with pytest.raises(SessionError, match=r"Session\.timeline\(\) needs the views layer"):
        viewers.viewer("timeline")
