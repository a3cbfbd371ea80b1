"""Hostile cells: what a user's cells show is data, and telling the agent about it never fails a ``%%pi`` cell.

Odd display bundles (values that are not text, broken images, huge HTML), output that is not
valid UTF-8 text, exceptions that cannot describe themselves, objects whose attributes raise,
and secrets split across writes: the notebook context is still made, still redacted, and the
session file still takes it.
"""

from __future__ import annotations

import asyncio

from pi_jupyter import Session
from pi_jupyter.agent.toolbox.namespace import describe_namespace
from pi_jupyter.messages import ImageContent
from pi_jupyter.notebook.notebook_context import ContextBudget, notebook_message

pytest_plugins = ["cell_shell"]  # the fixtures shell and log

KEY = "sk-ant-api03-" + "Hx" * 24


def tell(log, **budget):
    session = Session.in_memory()
    message = notebook_message(log, session, None, budget=ContextBudget(**budget))
    assert message is not None
    # the session takes it (and a file would: the entry is written as JSON)
    session.append_custom_message(message.custom_type, message.content, display=True, details=message.details)
    return message.content[0].text, [b for b in message.content if isinstance(b, ImageContent)]


def test_odd_display_bundles_are_told_without_failing(shell, log):
    shell.run_cell("from IPython.display import publish_display_data as show", store_history=True)
    shell.run_cell("show({'text/plain': 42, 'text/html': None})", store_history=True)
    shell.run_cell("show({'image/png': b'not base64', 'text/plain': 'bytes'})", store_history=True)
    shell.run_cell("show({'image/png': '!!!not-base64!!!', 'text/plain': 'broken'})", store_history=True)
    shell.run_cell("show({'text/html': '<script>alert(1)</script>' + '<p>x</p>' * 200_000})", store_history=True)
    shell.run_cell("show({'application/json': {'a': [1, 2, {'b': None}]}})", store_history=True)
    text, images = tell(log)
    assert "alert(1)" not in text.split("display (text/html):", 1)[1]  # HTML is read as text; scripts are not text
    assert len(text) < 30_000
    assert [i.data for i in images] == ["!!!not-base64!!!"]  # a string is attached as given: the vendor judges it
    assert '{"a": [1, 2, {"b": null}]}' in text


def test_output_that_is_not_valid_text_and_errors_that_cannot_describe_themselves(shell, log):
    shell.run_cell("print('lone \\ud800 surrogate and \\x00 nul and \\x1b[31mcolour')", store_history=True)
    shell.run_cell("class Bad(Exception):\n    def __str__(self):\n        raise RuntimeError('no')\nraise Bad()", store_history=True)
    shell.run_cell("raise KeyError('x' * 100_000)", store_history=True)
    shell.run_cell("def f(n):\n    return f(n + 1)\nf(0)", store_history=True)
    text, _ = tell(log)
    assert "RecursionError" in text and "frames left out" in text
    assert text.count("\n") < 400


def test_secrets_split_across_writes_or_set_in_code_are_redacted(shell, log, monkeypatch):
    shell.run_cell(f"print({KEY[:14]!r}, end='')\nprint({KEY[14:]!r})", store_history=True)
    shell.run_cell("import os\nos.environ['LAB_DB_PASSWORD'] = 'correct-horse-battery'\nprint('db:', os.environ['LAB_DB_PASSWORD'])")
    shell.run_cell("print('postgres://ada:hunter22@db.example/sales')", store_history=True)
    shell.run_cell("print('Authorization: Bearer abcdefghijklmnopqrstuvwxyz0123')", store_history=True)
    text, _ = tell(log)
    assert KEY not in text and "stdout:\n```\n[REDACTED:anthropic-key]\n```" in text  # printed whole, redacted whole
    assert "correct-horse-battery" not in text and "hunter22" not in text and "abcdefghijklmnopqrstuvwxyz0123" not in text
    monkeypatch.delenv("LAB_DB_PASSWORD", raising=False)


def test_variables_whose_attributes_raise_are_described_by_their_type():
    class Shape:
        @property
        def shape(self):
            raise RuntimeError("no shape")

        def __len__(self):
            raise RuntimeError("no len")

        def __repr__(self):
            raise RuntimeError("no repr")

    class Lying:
        shape = ("a", "b")
        dtype = object()

    ns = {"weird": Shape(), "lying": Lying(), "x" * 10_000: 1, "big": "y" * 10_000_000, "API_KEY": KEY}
    text = describe_namespace(ns)
    assert "weird:" in text and "lying:" in text and KEY not in text
    assert "big: str, 10,000,000 chars" in text and "yyyy" * 20 not in text


def test_a_zero_budget_tells_one_line_per_cell_and_no_image(shell, log):
    shell.run_cell("from IPython.display import publish_display_data as show", store_history=True)
    shell.run_cell("show({'image/png': 'iVBORw0KGgo=', 'text/plain': 'img'})\nprint('long ' * 1000)", store_history=True)
    text, images = tell(log, chars=0, images=0)
    assert images == [] and "[2 earlier cells left out (over the notebook budget)]" in text


def test_a_pi_cell_with_a_hostile_notebook_still_runs(shell, log, tmp_path):
    from pi_jupyter import Agent

    shell.run_cell("print('\\ud800' * 3)", store_history=True)
    agent = Agent(Session.create(tmp_path), model="offline/echo", thinking="off")
    message = notebook_message(log, agent.session, agent.session.leaf_id)
    result = asyncio.run(agent.prompt("hi", context=[message]))
    assert result.ok
    assert Session.open(agent.session.path, readonly=True).load_report.ok
