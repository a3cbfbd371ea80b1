"""``pi-jupyter context|tree|info``, run as ``python -m pi_jupyter`` in a subprocess."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pi_jupyter.session import CHECKOUT_TYPE, Session


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pi_jupyter", *args], capture_output=True, text=True, encoding="utf-8", timeout=60)


def user(text: str, ts: int = 1) -> dict:
    return {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": ts}


def assistant(content: list, stop: str = "stop", ts: int = 2) -> dict:
    return {
        "role": "assistant",
        "content": content,
        "api": "openai-responses",
        "provider": "openai",
        "model": "gpt-5",
        "usage": {},
        "stopReason": stop,
        "timestamp": ts,
    }


@pytest.fixture
def session_file(tmp_path) -> tuple[Session, dict[str, str]]:
    s = Session.create(tmp_path, cwd="/w")
    ids = {}
    s.append_model_change("openai", "gpt-5")
    s.append_thinking_level_change("high")
    ids["q"] = s.append_message(user("plot the loss 📈 中文"))
    ids["a"] = s.append_message(
        assistant(
            [
                {"type": "thinking", "thinking": "hmm"},
                {"type": "text", "text": "running"},
                {"type": "toolCall", "id": "c1", "name": "python", "arguments": {"code": "plot()"}},
            ],
            "toolUse",
        )
    )
    ids["r"] = s.append_message(
        {
            "role": "toolResult",
            "toolCallId": "c1",
            "toolName": "python",
            "content": [{"type": "text", "text": "x" * 5000}],
            "isError": False,
            "timestamp": 3,
        }
    )
    ids["done"] = s.append_message(assistant([{"type": "text", "text": "Here is the plot."}], ts=4))
    s.label(ids["q"], "start")
    s.checkout(ids["q"])
    ids["alt"] = s.append_message(user("another idea"))
    s.checkout(ids["done"])
    s.close()
    return s, ids


def test_help_says_files_are_opened_read_only():
    proc = cli("--help")
    assert proc.returncode == 0
    assert "read-only" in proc.stdout and "context" in proc.stdout and "tree" in proc.stdout and "info" in proc.stdout
    for command in ("context", "tree", "info"):
        sub = cli(command, "--help")
        assert sub.returncode == 0 and "read-only" in " ".join(sub.stdout.split())


def test_context_text(session_file):
    s, ids = session_file
    proc = cli("context", s.path)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert f"at leaf {ids['done']}" in out and "thinking level high" in out and "model openai/gpt-5" in out
    assert "plot the loss 📈 中文" in out and "[thinking] hmm" in out
    assert "→ python(" in out and '"code": "plot()"' in out
    assert "toolResult python [c1]" in out
    assert "[3800 more characters]" in out  # long tool output is cut
    assert out.index("1. user") < out.index("2. assistant") < out.index("3. toolResult") < out.index("4. assistant")
    assert proc.stderr == ""


def test_context_json_is_the_rebuilt_context(session_file):
    s, ids = session_file
    proc = cli("context", s.path, "--json")
    assert proc.returncode == 0
    out = json.loads(proc.stdout)
    assert list(out) == ["messages", "thinkingLevel", "model", "llm"]
    assert out["messages"] == Session.open(s.path).context().raw_messages
    assert out["thinkingLevel"] == "high" and out["model"] == {"provider": "openai", "modelId": "gpt-5"}
    assert [m["role"] for m in out["llm"]] == ["user", "assistant", "toolResult", "assistant"]


@pytest.mark.parametrize("ref", ["start", "label-prefix", "null"])
def test_context_leaf_by_label_prefix_or_null(session_file, ref):
    s, ids = session_file
    arg = {"start": "start", "label-prefix": ids["alt"][:6], "null": "null"}[ref]
    out = json.loads(cli("context", s.path, "--leaf", arg, "--json").stdout)
    texts = [m["content"][0]["text"] for m in out["messages"]]
    assert texts == {"start": ["plot the loss 📈 中文"], "label-prefix": ["plot the loss 📈 中文", "another idea"], "null": []}[ref]
    if ref == "null":
        assert out["thinkingLevel"] == "off" and out["model"] is None


def test_unusable_input_exits_2_with_one_line(tmp_path, session_file):
    s, _ = session_file
    cases = {
        "unknown leaf": ("context", s.path, "--leaf", "nosuchentry"),
        "missing file": ("tree", str(tmp_path / "missing.jsonl")),
        "folder": ("info", str(tmp_path)),
        "not a session": ("context", str(tmp_path / "not.jsonl")),
    }
    (tmp_path / "not.jsonl").write_text('{"type":"message","id":"x"}\n')
    for what, args in cases.items():
        proc = cli(*args)
        assert proc.returncode == 2, what
        assert proc.stdout == "", what
        assert len(proc.stderr.strip().splitlines()) == 1 and proc.stderr.startswith("pi-jupyter: error: "), what
        assert "Traceback" not in proc.stderr
    assert "nosuchentry" in cli(*cases["unknown leaf"]).stderr
    assert "no such file" in cli(*cases["missing file"]).stderr
    assert "folder" in cli(*cases["folder"]).stderr
    assert (tmp_path / "not.jsonl").read_text() == '{"type":"message","id":"x"}\n'


def test_tree_marks_the_path_shows_labels_and_hides_checkouts(session_file):
    s, ids = session_file
    proc = cli("tree", s.path)
    assert proc.returncode == 0
    lines = proc.stdout.splitlines()
    by_id = {line[2:].lstrip("│├└─ ").split()[0]: line for line in lines}
    assert by_id[ids["q"]].startswith("* ") and "[start]" in by_id[ids["q"]]
    assert by_id[ids["done"]].startswith("* ") and by_id[ids["done"]].endswith("← leaf")
    assert by_id[ids["alt"]].startswith("  ")  # not on the current branch
    assert "├─" in proc.stdout and "└─" in proc.stdout  # the branch point after the question
    markers = [e["id"] for e in Session.open(s.path).raw_entries() if e.get("customType") == CHECKOUT_TYPE]
    assert markers and not any(m in proc.stdout for m in markers)


def test_tree_of_a_long_linear_session_is_not_indented(tmp_path):
    s = Session.create(tmp_path, cwd="/w", durability="never")
    for i in range(1000):
        s.append_message(user(f"message {i}", ts=i))
    proc = cli("tree", s.path)
    lines = proc.stdout.splitlines()
    assert len(lines) == 1000
    assert all(line.startswith("* ") and line[2:10].isalnum() for line in lines)
    assert "message 999" in lines[-1] and lines[-1].endswith("← leaf")


def test_info_lists_facts_and_every_problem_with_line_numbers(tmp_path, session_file):
    s, ids = session_file
    proc = cli("info", s.path)
    assert proc.returncode == 0
    out = proc.stdout
    for needle in (s.id, "cwd:", "/w", "messages:", "assistant 2", "models:", "openai/gpt-5", "load report:    no problems", "start"):
        assert needle in out, needle
    info = json.loads(cli("info", s.path, "--json").stdout)
    assert info["id"] == s.id and info["leaf"] == ids["done"] and info["messages"] == 5
    assert info["messageRoles"] == {"user": 2, "assistant": 2, "toolResult": 1}
    assert info["labels"] == {ids["q"]: "start"} and info["problems"] == []

    damaged = tmp_path / "damaged.jsonl"
    data = Path(s.path).read_bytes().split(b"\n")
    damaged.write_bytes(b"\n".join([*data[:4], b"{oops", *data[4:-1]]) + b'\n{"type":"message","id":"tor')
    proc = cli("info", str(damaged))
    assert proc.returncode == 1
    assert "line 5: error: not JSON" in proc.stdout and "torn_tail" not in proc.stdout
    assert "cut off" in proc.stdout and "problem(s)" in proc.stdout
    # context and tree still work on it, say so on stderr, and exit 1
    for command in ("context", "tree"):
        other = cli(command, str(damaged))
        assert other.returncode == 1 and other.stdout and "pi-jupyter: note:" in other.stderr


def test_looking_never_rewrites_an_old_file(tmp_path):
    path = tmp_path / "v1.jsonl"
    path.write_text(
        '{"type":"session","id":"old","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/w"}\n'
        '{"type":"message","timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"user","content":"hi","timestamp":1}}\n'
    )
    before = path.read_bytes()
    mtime = path.stat().st_mtime_ns
    for command in ("context", "tree", "info"):
        assert cli(command, str(path)).returncode == 0
    assert path.read_bytes() == before and path.stat().st_mtime_ns == mtime


def test_output_into_a_closed_pipe_is_quiet(tmp_path):
    s = Session.create(tmp_path, cwd="/w", durability="never")
    for i in range(3000):
        s.append_message(user(f"message {i} " + "y" * 50, ts=i))
    proc = subprocess.Popen([sys.executable, "-m", "pi_jupyter", "tree", s.path], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None
    proc.stdout.readline()
    proc.stdout.close()
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0 and b"Traceback" not in err


def test_a_cycle_on_the_current_branch(tmp_path):
    path = tmp_path / "cycle.jsonl"
    head = {"type": "session", "version": 3, "id": "s", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/w"}
    rows = [head]
    for eid, parent in (("root0001", None), ("aaaa0001", "bbbb0001"), ("bbbb0001", "aaaa0001")):
        rows.append({"type": "message", "id": eid, "parentId": parent, "timestamp": "2025-01-01T00:00:01.000Z", "message": user(eid)})
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    proc = cli("context", str(path))
    assert proc.returncode == 2 and "parent cycle" in proc.stderr and "Traceback" not in proc.stderr
    assert cli("context", str(path), "--leaf", "root0001").returncode == 1  # another branch is fine
    info = cli("info", str(path))
    assert info.returncode == 1 and "parent cycle" in info.stdout
    tree = cli("tree", str(path))
    assert tree.returncode == 1 and "root0001" in tree.stdout


def test_tree_of_many_nested_branch_points_stays_narrow(tmp_path):
    # each re-run goes back one entry and goes on from there: the branch points nest, one inside
    # the next, and the indentation must not grow with them (300 levels would be 900 columns)
    s = Session.create(tmp_path, cwd="/w", durability="never")
    s.append_message(user("start"))
    for i in range(300):
        point = s.leaf_id
        s.append_message(user(f"abandoned {i}", ts=2 * i))
        s.checkout(point, persist=False)
        s.append_message(user(f"kept {i}", ts=2 * i + 1))
    s.close()
    proc = cli("tree", s.path)
    assert proc.returncode == 0
    lines = proc.stdout.splitlines()
    assert len(lines) == 601
    assert max(len(line) for line in lines) < 120
    assert "kept 299" in lines[-1] and lines[-1].endswith("← leaf") and lines[-1].startswith("* ")
    assert sum("⋯" in line for line in lines) > 500  # the deep ones say they are deeper than shown
    assert all(f"abandoned {i}" in proc.stdout for i in range(300))


def test_tree_says_which_entries_sit_on_a_parent_cycle(tmp_path):
    path = tmp_path / "cycle.jsonl"
    head = {"type": "session", "version": 3, "id": "s", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/w"}
    rows = [head]
    for eid, parent in (("root0001", None), ("aaaa0001", "bbbb0001"), ("bbbb0001", "aaaa0001"), ("cccc0001", "bbbb0001")):
        rows.append({"type": "message", "id": eid, "parentId": parent, "timestamp": "2025-01-01T00:00:01.000Z", "message": user(eid)})
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    proc = cli("tree", str(path))
    assert proc.returncode == 1
    assert proc.stdout.splitlines()[0].startswith("  root0001")
    assert "3 entries cannot be reached from a root" in proc.stdout
    for eid in ("aaaa0001", "bbbb0001", "cccc0001"):
        assert eid in proc.stdout
    # the context of the current leaf (on the cycle) is refused, naming the file and a line
    context = cli("context", str(path))
    assert context.returncode == 2 and f"{path}:3:" in context.stderr and "parent cycle" in context.stderr
    info = json.loads(cli("info", "--json", str(path)).stdout)
    assert info["leaf"] == "cccc0001" and info["branchLength"] is None
    assert "on a parent cycle" in cli("info", str(path)).stdout
