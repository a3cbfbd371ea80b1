"""Nothing the long README said is lost: every statement of it is on a page of the docs site.

The README of 1,576 lines became a short README over a manual (``docs/*.md``, built by mkdocs).
The README as it was is kept, unchanged, in ``tests/fixtures/readme_before_manual.md``. Each of
its statements (every heading; every sentence of a paragraph, a list item or a quote; every row
of a table; every line of a code block) must be found on some page of the site (the README
itself included: it is the site's front page), as the site shows the page: with the ``%pi``
command list, the ``%%pi`` options and the CLI's help filled in from the code. Statements are
compared modulo whitespace, emphasis (``*``) and link targets (a link counts as its text), so a
sentence may move to another page, gain a link or lose its bold, but not lose a word.

A statement changed on purpose (it became false, or it pointed at the README) is listed in
:data:`REVISED` with the text that says it now, which must then be on a page; one dropped on
purpose is listed with ``None`` and the reason. When a fix to the manual makes this test fail,
add the old statement there, with what replaced it; never edit the frozen copy.
"""

from __future__ import annotations

import importlib.util
import re
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FROZEN = ROOT / "tests" / "fixtures" / "readme_before_manual.md"

# old statement (as the frozen README writes it, after the normalisation below) -> what says it now
# (which must be on a page), or None and why it is gone
REVISED: dict[str, tuple[str | None, str]] = {
    "judged: 16 blind pairwise judgements by alice": (
        ("judged: 12 blind pairwise judgements by alice, model stand-in (1 person, 1 model); each judge counted apart"),
        "issue 41 (hard): the summary reports each judge apart (a pair counted once); the example shows a person and a model judge",
    ),
    "how=python won 88% [64%, 97%] of 16 judgements (13 wins, 2 ties)": (
        "alice: how=with an example won 100% [51%, 100%] of 4 pairs (4 wins)",
        "issue 41 (hard): the summary reports each judge apart (a pair counted once); the example shows a person and a model judge",
    ),
    ("position: alice picked the answer shown first in 7 of 14 decisive judgements (50% [27%, 73%], p = 1 against no bias)"): (
        "position: model stand-in picked the answer shown first in 8 of 8 decisive judgements",
        "issue 41 (hard): the summary reports each judge apart (a pair counted once); the example shows a person and a model judge",
    ),
    ('(A change you make in place without rebinding the name, such as `df.loc[0, "a"] = 5`, is not seen as yours.)'): (
        ('A change you make in place (`df.loc[0, "a"] = 5`, `xs.append(3)`) is seen as yours too: your cells are read for it'),
        (
            "issue 38 (wexact): changes in place are seen as yours, your cells are read for them; a notebook"
            " function changing a global is recorded; a grid runs notebook functions in the branch's own globals"
        ),
    ),
    (
        "Not seen at all: a change made through another name or inside a function the code does not name (`he"
        "lper()` changing a global); files written by native code that bypasses Python (pyarrow's parquet wri"
        "ter, h5py), by a subprocess (`os.system`, `subprocess`, `bash`), through a function a library took f"
        "rom `os` before the call (`from os import remove`), or by a thread the code starts (only the code's "
        "own thread is followed: the calls of one answer run at the same time, and a `write` call's file is i"
        'ts own); a folder renamed as a whole (`os.rename("out", "old")`); past the first 1,000 files of one '
        "call (the line then counts the call as one whose effects were not all tracked); files under `.git`, "
        "`__pycache__`, `.venv`, `venv`, `node_modules`, `site-packages`, tool caches and the session folder;"
        " and the `python` files of a grid's branches, which share the project folder (their `write`/`edit` f"
        "iles are their own)."
    ): (
        ("Not seen at all: a change made inside a library's function or by a thread, through an object the world never saw"),
        (
            "issue 38 (wexact): changes in place are seen as yours, your cells are read for them; a notebook"
            " function changing a global is recorded; a grid runs notebook functions in the branch's own globals"
        ),
    ),
    (
        "A grid's isolation is a namespace of its own, not a process: a branch that changes the notebook's st"
        "ate through a function whose globals are the notebook's (`global x` in a function you defined) chang"
        "es the notebook's."
    ): (
        (
            "functions you defined run in the branch's own globals, but a method of a class you defined, or a mod"
            "ule's state, is the notebook's."
        ),
        (
            "issue 38 (wexact): changes in place are seen as yours, your cells are read for them; a notebook"
            " function changing a global is recorded; a grid runs notebook functions in the branch's own globals"
        ),
    ),
    (
        "Per compared key (every varied key with 2 to 6 values, or `--compare KEY`; a key with more, such as "
        "a list of questions, is what the pairs share): branches that share every other value and the repeat "
        "index (the same question asked both ways) are paired; each comparison has the mean difference, its 9"
        "5% interval (paired t; Bonett-Price for 0/1 scores), the p-value of a paired test (t; McNemar's exac"
        "t test for 0/1 scores), Holm-adjusted for every comparison of the summary, and one line in plain wor"
        "ds with, when nothing was detected, how many pairs would detect a difference (80% power):"
    ): (
        "its interval at the level the verdicts were held to",
        "issue 41: the interval shown is the one the verdict uses; an undecided line says why",
    ),
    (
        "Without a difference the line reads `no detectable difference between tone=dry and tone=warm on qual"
        "ity: -0.07 [-0.54, +0.40], p = 1.00 (n = 10 pairs); about 6 pairs would detect a 1.60 difference` (0"
        ".2 on a 0/1 score, a fifth of the largest value otherwise, or the difference seen if larger; `summar"
        "y(detect=...)` sets it)."
    ): (
        "Without a decision the line says why",
        "issue 41: the interval shown is the one the verdict uses; an undecided line says why",
    ),
    (
        "A branch's world (see A branch carries its world) is what the tools did: `bash` and files written by"
        " `python` are counted or missed, not restored; a grid branch is isolated by a namespace of its own, "
        "not a process, so code that reaches the notebook's globals through a function defined there changes "
        "the notebook."
    ): (
        ("files written by `python` are restored, but not those written by native code or a subprocess"),
        (
            "the world page says files the python tool writes through Python are restored; the limit is what bypasses"
            " Python; a grid runs notebook functions in the branch's own globals (issue 38)"
        ),
    ),
    (
        "The data is in `.pi-world/` in the session folder: content-addressed (SHA-256, the same value or fil"
        "e kept once whatever refers to it), Zstandard-compressed when it pays (random floats are kept as the"
        "y are), written atomically (a full disk is one line in the record, `not saved: the disk is full: …`,"
        " and the call and the record go on), and checked against its hash when read: a damaged object is one"
        " line for the name it held (`could not restore plan (the saved object 1a88ffdcfc26 is cut short)`, `"
        "… is damaged (its content does not match its hash)`, `… cannot be read`, `… is not one of the world'"
        "s`) and everything else comes back."
    ): (
        (
            "The data is in `.pi-world/` in the session folder (plain data as MessagePack with each array's bytes"
            " beside it, anything else a pickle signed with your key"
        ),
        "issue 36: plain data is stored without pickle, pickles are signed",
    ),
    (
        "Not restored, and named in the line: objects that cannot be pickled (connections, locks, generators,"
        " open files, a `numpy.memmap`, which is a view of a file) once the kernel that made them is gone (th"
        "e same kernel holds the last 256 of them, so a checkout there brings the very object back), values o"
        'ver 512 MB, values and files that hold a secret (see below), what `bash` did (counted: "N bash comma'
        'nds had effects outside the tracked files").'
    ): (
        "objects that need pickle and were saved by someone else",
        "issue 36: objects that need pickle load only when your key signed them",
    ),
    (
        "Restored: every variable a `python` call rebound, deleted or changed in place through its own name ("
        '`df["c"] = 1`, `xs.append(2)`, `del d[k]`, `df.drop(columns="c", inplace=True)`, `model.fit(...)`, p'
        "assing it to a function defined in the notebook), modules (imported again by name), functions and cl"
        "asses defined in the notebook (kept by value), every file `write` and `edit` wrote inside the projec"
        "t folder, and every file the `python` tool wrote through Python inside it: `open()`, `Path.write_tex"
        "t`, `df.to_csv`, `np.save`, `plt.savefig`, `os.remove`, `os.rename`, `shutil.copy`, `shutil.rmtree`,"
        " a `sqlite3` database (`changed: wrote out.csv; removed old.txt`)."
    ): (
        ("modules (imported again by name, when installed in your environment: never a `.py` from the session's or the project's folder)"),
        "issue 36: a checkout imports only installed modules",
    ),
    "|`tool_timeout`|`60`|seconds before the python tool gives up|": (
        "seconds before the python tool stops the code (0: no limit)",
        "issue 37: the python tool's timeout stops the code on the kernel's main thread (0: no limit)",
    ),
    (
        "`%%pi [--session NAME|PATH] [--model PROVIDER/MODEL] [--thinking LEVEL] [--tools LIST] [--continue] "
        "[--background] [--name VAR] [--replay] [--pace 2x] [--step]`"
    ): (
        "[--replay] [--pace 2x] [--step] [--no-notebook]",
        "issue 39: --no-notebook",
    ),
    "|`tools`|`read ls grep find python`|tools a cell may use|": (
        "| `tools` | `read ls grep find python notebook` | tools a cell may use |",
        "issue 39: the notebook tool is in the default set",
    ),
    (
        "A code block in an answer offers Copy and Insert as cell (a new code cell right below, in JupyterLab"
        " and Notebook 7; elsewhere the code is copied to paste)."
    ): (
        "A code block in an answer offers Copy, and code the agent wrote for you Insert as cell too",
        "issue 37: Insert as cell only on code the agent wrote for you",
    ),
    (
        "|a reproducible experiment|a question about a data set the notebook makes, as a grid (thinking level"
        "s × prompt variants × repeats) of sibling branches with two scorers; the table rebuilt from the sess"
        "ion file alone, a figure; replayed from the shipped recording (made with the offline model, and it s"
        "ays so) with the same scores and tokens; the same grid as one `%%pi --vary` cell; which variant is b"
        "etter (means with 95% intervals, a paired verdict, `--until-decided` stopping after 4 of 10 repeats)"
        ", a blind judging round (`%pi judge`) and a model judge asked in both orders, the grid again on a Da"
        "sk `LocalCluster` (`--executor dask`, the same table), and the summary rebuilt from the file alone; "
        "runs under papermill (`-p REPLAY False -p MODELS ...` for a real model)|~10 s|"
    ): (
        "| ~25 s (half of it the Dask section, which starts worker processes) |",
        "issue 37: measured with nbclient (bench/bench_notebooks.py)",
    ),
    (
        "Tools: pi's `read`, `ls`, `grep`, `find`, `write`, `edit`, `bash` (pi's output limits; truncated out"
        "put is saved to a file the result names) and `python`, which runs in the notebook's own namespace (s"
        "tdout, the value's repr, rich reprs as text, short tracebacks, a timeout; images go to `details` for"
        " the widget, not to the model)."
    ): (
        "a plot it shows or returns reaches a model that takes images, once, in the result",
        "issue 39: plots reach the model; the notebook tool",
    ),
    (
        "The default set is read-only file tools plus `python`, because an agent in a notebook is there to lo"
        "ok at your data; `write`, `edit` and `bash` must be asked for."
    ): (
        "The default set is read-only file tools plus `python` and `notebook`",
        "issue 39: plots reach the model; the notebook tool",
    ),
    (
        "Secrets held in variables follow the redaction rules: a value whose pickled text (up to 1 MB; an arr"
        "ay's numbers are not text and are not read) holds a secret (an API key, a token), nested in a dict o"
        "r a list of 20,000 rows too, is not saved (`cfg: dict of 1: holds a secret, not saved`), nor is a fi"
        "le of up to 1 MB that holds one (`.env`); this kernel holds them for a checkout, a new one names the"
        "m."
    ): (
        ("a value whose stored text (up to 1 MB: its strings, and arrays of text or bytes; an array's numbers are not read)"),
        "issue 36: plain data is stored without pickle",
    ),
    ("A value whose pickled text is over 1 MB is saved without being read for secrets, like the file it came from."): (
        "A value whose stored text is over 1 MB is saved without being read for secrets",
        "issue 36: plain data is stored without pickle",
    ),
    (
        "Serializers on a 100 MB frame / 100 MB array / 100,000 small items: pickle 63/56/28 ms, cloudpickle "
        "48/47/26 ms, dill 99/119/1,240 ms to dump; cloudpickle is used (protocol 5, buffers out of band, not"
        "ebook functions by value)."
    ): (
        "cloudpickle is used for what the plain formats cannot keep",
        "issue 36: plain data is stored without pickle",
    ),
    (
        "A notebook continues the conversation its own saved `%%pi` outputs name (each carries the session's "
        "id, where its file is, and the notebook's id in its metadata), never one found by its file name: a n"
        "ew notebook, even one called `Untitled.ipynb` like the last one, starts a new session named after it"
        "; a renamed or moved notebook, a restarted kernel or server (even before the first save: the cells' "
        "ids are in the session) go on with the same one; a duplicated notebook (JupyterLab's Duplicate, a `c"
        "p`) goes on in a fork of the original's conversation, said once in its first cell, and the original "
        "never sees the copy's turns."
    ): (
        (
            "When a kernel runs its first `%%pi` or `%pi` command, whichever cell that is (an old one, or a new "
            "one typed at the bottom after a restart), it reads the notebook's saved file and goes on with the "
            "conversation of its newest output:"
        ),
        "issue 37: the rule changed (the section is now a table of what the user did and what the first cell does)",
    ),
    (
        "`jupyter execute` and papermill do not tell the kernel which notebook it runs, so each of their runs"
        " starts a session of its own (run them with `JPY_SESSION_NAME=path/to/notebook.ipynb` to continue th"
        "e notebook's)."
    ): (
        (
            "not tell the kernel which notebook it runs, nor the cells' ids: it finds it by its `%pi` cells "
            "and goes on in a fork, said once."
        ),
        "issue 37: the rule changed",
    ),
    "Or run the notebooks on mybinder.org: `binder/` holds what it installs, and "
    "`https://mybinder.org/v2/gh/OWNER/REPO/HEAD?urlpath=lab/tree/notebooks/quickstart.ipynb` opens the quickstart "
    "of the repository `OWNER/REPO` (this README carries no badge until the repository's public address is settled); "
    "or read the notebooks on GitHub with their outputs.": (
        "opens the quickstart of the repository `OWNER/REPO` (the README carries no badge until the repository's "
        "public address is settled); or read the notebooks on GitHub with their outputs.",
        "the sentence moved from the README to Install, run, test",
    ),
    "What it looks like": (
        None,
        "the README shows one picture; the others are on the pages of what they show (notebook, tree, experiments)",
    ),
    "pi: stop · 2 new entries · 1,498 tokens · $0.0000 · 0.1s · offline/echo": (
        "pi: stop · 3 new entries · 1,848 tokens · $0.0000 · 0.0s · offline/echo",
        "what the first cell shows today (the recorded system prompt is one entry more; the notebook tool is in the system prompt)",
    ),
    "compare A B [C ...] compare branches (ids, labels or cell ids)": (
        "compare A B [C ...] compare branches (ids, labels, root, In[n], cell ids, CELL@2; --turns)",
        "the %pi command list is now taken from the code, which says more",
    ),
    "Why this way (`python bench/bench_world.py`, the files lines below).": (
        "Why this way (`python bench/bench_world.py`, the files lines of Speed).",
        "the figures moved to the Speed page",
    ),
    (
        "`.ci/run` ends with the test command itself, `python -m pytest` (about 10 minutes on 2 cores, the Bi"
        "nder-environment test included; the real-browser tests drive JupyterLab in Debian's headless Chromiu"
        "m, the interop tests install pi 0.73.1 and pi 1.6.0 from npm into `~/.cache/pi-jupyter` once (and no"
        "de 22 from npm for pi 1.6's RPC mode) and skip with a reason when node is missing; every skip is lis"
        "ted with its reason, and under `CI=true` a skipped browser, kernel or interop test is a failure)."
    ): (
        "`.ci/run` ends with the test command itself, `python -m pytest` (about 43 minutes on 2 cores, the",
        "the suite grew with the issues since; the figure is the last fresh-clone run's (stop 44)",
    ),
}


def _hooks():
    spec = importlib.util.spec_from_file_location("docs_hooks", ROOT / "docs" / "hooks.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_LINK = re.compile(r"!?\[([^\]]*)\]\([^)\s]*\)")


def normalise(text: str) -> str:
    """Text as compared: links as their text, no emphasis marks, table cells and whitespace evened out."""
    text = _LINK.sub(r"\1", text)
    text = text.replace("*", "")
    text = re.sub(r"\s*\|\s*", "|", text)
    return re.sub(r"\s+", " ", text).strip()


# a sentence ends at . ! ? (or at the end of the bold lead sentence it is) followed by a space and what starts a sentence
_SENTENCE_END = re.compile(r"(?:(?<=[.!?])|(?<=[.!?]\*)|(?<=[.!?]\*\*))\s+(?=[A-Z`(*\[\"'])")


def statements(markdown: str) -> list[tuple[int, str]]:
    """(line number, statement) of a Markdown text: headings, sentences, table rows, code lines."""
    found: list[tuple[int, str]] = []
    lines = markdown.splitlines()
    fence: str | None = None
    block: list[tuple[int, str]] = []

    def flush() -> None:
        if block:
            text = " ".join(line for _, line in block)
            text = re.sub(r"^(?:[-*]|\d+\.)\s+", "", text.strip())  # a list item's marker
            for sentence in _SENTENCE_END.split(text):
                if normalise(sentence):
                    found.append((block[0][0], sentence))
            block.clear()

    for number, line in enumerate(lines, 1):
        stripped = line.strip()
        if fence is not None:
            if stripped.startswith(fence) and set(stripped) <= {fence[0]}:
                fence = None
            elif stripped:
                found.append((number, stripped))
            continue
        opening = re.match(r"(`{3,}|~{3,})", stripped)
        if opening:
            flush()
            fence = opening.group(1)
            continue
        if not stripped:
            flush()
        elif stripped.startswith("#"):
            flush()
            found.append((number, stripped.lstrip("#").strip()))
        elif stripped.startswith("|"):
            flush()
            if not re.fullmatch(r"[|:\-\s]+", stripped):  # not the row under a table's header
                found.append((number, stripped))
        elif re.match(r"(?:[-*]|\d+\.)\s", stripped):
            flush()  # a new list item
            block.append((number, stripped))
        else:
            block.append((number, stripped))
    flush()
    return found


@cache
def site_text() -> str:
    """Every page of the site, as the build's hooks make it, normalised into one text."""
    hooks = _hooks()
    pages = [hooks.readme_for_site("")]
    for page in sorted((ROOT / "docs").glob("*.md")):
        pages.append(hooks.page_for_site(page.read_text(encoding="utf-8"), ""))
    return "\n".join(normalise(page) for page in pages)


@cache
def site_headings() -> str:
    """The headings of every page, one a line, normalised."""
    pages = [(ROOT / "README.md").read_text(encoding="utf-8"), *(p.read_text(encoding="utf-8") for p in (ROOT / "docs").glob("*.md"))]
    return "\n".join("# " + normalise(line.lstrip("#")) for page in pages for line in page.splitlines() if line.startswith("#"))


def test_every_statement_of_the_long_readme_is_on_a_page_of_the_manual():
    text = site_text()
    headings = set(re.findall(r"(?:^|\n)#+ ([^\n]+)", site_headings()))
    lost = []
    for number, statement in statements(FROZEN.read_text(encoding="utf-8")):
        key = normalise(statement)
        if key in text or key.rstrip(".:") in headings:  # a lead sentence ("**Exporting and sharing.**") may be a heading now
            continue
        now, _why = REVISED.get(key, (key, ""))
        if key in REVISED and (now is None or normalise(now) in text):
            continue
        lost.append(f"{FROZEN.name}:{number}: {statement}")
    assert not lost, (
        f"{len(lost)} statement(s) of the README before the manual are on no page of docs/ or the README "
        "(say them on a page, or list them in REVISED with what replaced them):\n" + "\n".join(lost)
    )


def test_every_revision_replaces_a_statement_of_the_long_readme():
    keys = {normalise(s) for _, s in statements(FROZEN.read_text(encoding="utf-8"))}
    stale = [old for old in REVISED if old not in keys]
    assert not stale, f"REVISED lists statements the README never made: {stale}"
    text = site_text()
    missing = [now for now, _ in REVISED.values() if now is not None and normalise(now) not in text]
    assert not missing, f"REVISED names replacements that no page says: {missing}"


def test_the_statements_are_what_a_reader_reads():
    # the splitter's own contract, on a small text: a lost word anywhere is a lost statement
    sample = (
        "# Title\n\n**Lead.** One sentence here. Another one, with a [link](x.md) and **bold**.\n\n"
        "- an item. Its second sentence\n  goes on.\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n```\ncode  line\n```\n"
    )
    got = [normalise(s) for _, s in statements(sample)]
    assert got == [
        "Title",
        "Lead.",
        "One sentence here.",
        "Another one, with a link and bold.",
        "an item.",
        "Its second sentence goes on.",
        "|a|b|",
        "|1|2|",
        "code line",
    ]
    assert normalise("Another one, with a link and bold.") in normalise("Another one, with a [link](y.md) and *bold*.")
    assert normalise("Another one, with a link and bold.") not in normalise("Another one, with a link and more bold.")
