"""The nesting cap: msgspec refuses exactly the lines nested more than MAX_DEPTH deep, or the cap is not used.

The command line reads a large session without counting each line's brackets: msgspec's own
recursion guard, set to leave MAX_DEPTH levels (:mod:`pi_jupyter.session.depth_cap`), refuses the
lines too deep. These tests hold it to the exact rule every reader applies (:func:`too_deep`), on
lines built around the limit by hand and at random, in a fresh single-threaded interpreter as the
command line is, and they check that a process with other threads never lowers the limit.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from pi_jupyter.session import Session
from pi_jupyter.session.jsonl import MAX_DEPTH, too_deep

CAP_WORKS = sys.implementation.name == "cpython" and sys.version_info < (3, 12)

VERDICTS = textwrap.dedent(
    """
    import json, sys
    from pi_jupyter.session import depth_cap
    from pi_jupyter.session.bulk import _DECODERS
    lines = json.load(open(sys.argv[1]))
    limit = sys.getrecursionlimit()
    out = {"available": depth_cap.available(), "refused": []}
    for timed in (False, True):
        refused = []
        for line in lines:
            try:
                depth_cap.capped(_DECODERS[timed], (line + "\\n").encode())
            except RecursionError:
                refused.append(True)
            except Exception:
                refused.append(None)  # refused for another reason (a field of the wrong type)
            else:
                refused.append(False)
        out["refused"].append(refused)
    out["limit_kept"] = sys.getrecursionlimit() == limit
    out["state"] = depth_cap._state
    print(json.dumps(out))
    """
)


def verdicts(tmp_path: Path, lines: list[str]) -> dict:
    """What a fresh interpreter (one thread, as the command line) says of each line under the cap."""
    data = tmp_path / "lines.json"
    data.write_text(json.dumps(lines))
    proc = subprocess.run([sys.executable, "-c", VERDICTS, str(data)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def nested(depth: int, rng: random.Random | None = None) -> str:
    """A value nesting ``depth`` levels: arrays and objects mixed at random, with brackets inside strings and siblings."""
    if rng is None:
        return "[" * depth + "1" + "]" * depth
    text = '"[{[{ not a level }]}]"'
    for _ in range(depth):
        sibling = rng.choice(["", '"a",', '{"k":[1,{}]},', "[[[]]],", '"}]",'])
        if rng.random() < 0.5:
            text = f"[{sibling}{text}]"
        else:
            key = rng.choice(["x", "[", "{{", "}"])
            text = "{" + (f'"s":{sibling[:-1]},' if sibling else "") + f'"{key}":{text}' + "}"
    return text


LINE = (
    '{"type":"message","id":"a2","parentId":"a1","timestamp":"2026-01-01T00:00:02Z","message":{"role":"assistant",'
    '"content":[{"type":"text","text":"the answer"},{"type":"toolCall","id":"c1","name":"read","arguments":{"path":"a"}}],'
    '"provider":"p","model":"m","stopReason":"toolUse","timestamp":2}}'
)
PLACES = {  # where a deep value sits, and how many levels the line adds around it
    "beside the entry": (lambda v: LINE[:-1] + f',"extra":{v}}}', 1),
    "in the message": (lambda v: LINE[:-2] + f',"details":{v}}}}}', 2),
    "in a tool call's arguments": (lambda v: LINE.replace('{"path":"a"}', f'{{"path":"a","x":{v}}}'), 5),
    "as the message's content": (lambda v: LINE.replace('"content":[', f'"content":[{v},', 1), 3),
    "as the role": (lambda v: LINE.replace('"role":"assistant"', f'"role":{v}'), 2),
}


@pytest.mark.skipif(not CAP_WORKS, reason="the cap is for CPython 3.10 and 3.11; later versions count brackets")
def test_the_cap_refuses_exactly_the_lines_too_deep_wherever_the_depth_is(tmp_path: Path) -> None:
    lines, expected = [], []
    for make, around in PLACES.values():
        for total in (MAX_DEPTH - 1, MAX_DEPTH, MAX_DEPTH + 1, MAX_DEPTH + 2, 1000, 20000):
            line = make(nested(total - around))
            lines.append(line)
            expected.append(total > MAX_DEPTH)
            assert too_deep(line.encode()) is (total > MAX_DEPTH)  # the rule the cap stands for
    seen = verdicts(tmp_path, lines)
    assert seen["available"] and seen["limit_kept"] and not seen["state"]["broken"]
    for refused in seen["refused"]:
        for line, want, got in zip(lines, expected, refused, strict=True):
            if got is None:  # a list where a string is expected: refused before any depth (read one by one)
                assert '"role":[' in line
                continue
            assert got is want, (len(line), want)


@pytest.mark.skipif(not CAP_WORKS, reason="the cap is for CPython 3.10 and 3.11; later versions count brackets")
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_nesting_near_the_limit_is_refused_as_the_rule_says(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    lines = []
    for _ in range(120):
        make, around = rng.choice([p for name, p in PLACES.items() if name != "as the role"])
        lines.append(make(nested(rng.randint(MAX_DEPTH - 8, MAX_DEPTH + 4) - around, rng)))
    expected = [too_deep(line.encode()) for line in lines]
    assert 10 < sum(expected) < 110  # both sides of the limit are tried
    for line in lines:
        json.loads(line)  # every line is JSON: a refusal can only be its depth
    seen = verdicts(tmp_path, lines)
    assert seen["available"] and seen["limit_kept"]
    for refused in seen["refused"]:
        assert refused == expected


def test_a_process_with_other_threads_never_lowers_the_limit() -> None:
    script = textwrap.dedent(
        """
        import threading, time
        from pi_jupyter.session import depth_cap
        alone = depth_cap.available()
        stop = threading.Event()
        worker = threading.Thread(target=stop.wait)
        worker.start()
        beside = depth_cap.available()
        stop.set(); worker.join()
        print(alone, beside, depth_cap.available())
        """
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == [str(CAP_WORKS), "False", str(CAP_WORKS)]


HEADER = '{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00Z","cwd":"/tmp"}'
FIRST = (
    '{"type":"message","id":"a1","parentId":null,"timestamp":"2026-01-01T00:00:01Z","message":{"role":"user","content":"hi","timestamp":1}}'
)


@pytest.mark.parametrize("place", ["beside the entry", "in the message", "in a tool call's arguments"])
def test_the_command_line_and_a_kernel_agree_at_the_limit(tmp_path: Path, place: str) -> None:
    """``pi-jupyter context --json`` (one thread: the cap) and ``Session.open`` name the same line, one level past the limit."""
    make, around = PLACES[place]
    filler = [
        f'{{"type":"message","id":"f{i}","parentId":"{"a1" if i == 0 else f"f{i - 1}"}","timestamp":"2026-01-01T00:00:01Z",'
        f'"message":{{"role":"user","content":"filler {i}","timestamp":1}}}}'
        for i in range(300)  # a run of clean lines around the deep ones, read in bulk
    ]
    fits = make(nested(MAX_DEPTH - around)).replace('"id":"a2","parentId":"a1"', '"id":"a2","parentId":"f299"')
    deep = make(nested(MAX_DEPTH + 1 - around)).replace('"id":"a2","parentId":"a1"', '"id":"a3","parentId":"a2"')
    path = tmp_path / "limit.jsonl"
    before = "\n".join([HEADER, FIRST, *filler, fits, deep]) + "\n"
    path.write_text(before)
    proc = subprocess.run([sys.executable, "-m", "pi_jupyter", "context", "--json", str(path)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1, proc.stderr  # a malformed line is an error the command names (and goes on)
    deep_line = len(filler) + 4
    assert f"line {deep_line}" in proc.stderr and "nested too deeply" in proc.stderr
    assert f"line {deep_line - 1}" not in proc.stderr
    shown = json.loads(proc.stdout)["messages"]
    opened = Session.open(path, readonly=True)
    assert [(p.line, p.kind) for p in opened.load_report.problems] == [(deep_line, "malformed")]
    # the line at the limit is an entry for both, and the branch ends with it (the deep one is left out)
    assert [m.get("content") for m in shown] == [m.get("content") for m in opened.context().raw_messages]
    assert shown[-1]["role"] == "assistant" and len(shown) == len(filler) + 2
    assert path.read_text() == before


def test_with_another_thread_the_brackets_are_counted_and_give_the_same_answer(tmp_path: Path) -> None:
    """A kernel has other threads: there the bulk reader counts brackets, and names the same line."""
    import threading

    from pi_jupyter.session import depth_cap
    from pi_jupyter.session.scan import scan

    make, around = PLACES["in the message"]
    path = tmp_path / "limit.jsonl"
    fits = make(nested(MAX_DEPTH - around))
    deep = make(nested(MAX_DEPTH + 1 - around)).replace('"id":"a2","parentId":"a1"', '"id":"a3","parentId":"a2"')
    path.write_text("\n".join([HEADER, FIRST, fits, deep]) + "\n")
    stop = threading.Event()
    worker = threading.Thread(target=stop.wait)
    worker.start()
    try:
        assert not depth_cap.available()
        read = scan(str(path))
    finally:
        stop.set()
        worker.join()
    assert [(p.line, p.kind) for p in read.load_report.problems] == [(4, "malformed")]
    assert read.leaf_id == "a2"
