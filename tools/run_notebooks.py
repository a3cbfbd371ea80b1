"""Execute the shipped notebooks fresh, as a reader's "Run All" would, and keep their outputs.

    python tools/run_notebooks.py            # re-run every notebook in notebooks/ and save it with its outputs
    python tools/run_notebooks.py --check    # run them, save nothing, fail on an error or a traceback
    python tools/run_notebooks.py quickstart # only the notebooks whose name contains "quickstart"
    python tools/run_notebooks.py --pictures # also retake the pictures of the README and the manual (docs/images/) in JupyterLab

Each notebook runs in a fresh kernel with no API key in the environment (every ``*_API_KEY``
variable is removed), in a scratch copy of the ``notebooks/`` folder alone (its ``data/`` included), so
each runs as it does when that folder is downloaded by itself, and the session files they
write never land in the repository. Widget
state is not saved, as in JupyterLab's default settings: what a reader sees without a kernel
is the static part of each output (the transcript, the drawn tree, the tables), and every
picture is saved so that an untrusted notebook (a downloaded one) draws it too.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
CELL_TIMEOUT_S = 300

# a red flag in any text a cell shows: a Python traceback, or a magic's one-line error
_BAD_TEXT = re.compile(r"Traceback \(most recent call last\)|^UsageError:|^\w*Error: ", re.M)


def notebook_paths(pattern: str = "") -> list[Path]:
    """The shipped notebooks (``notebooks/*.ipynb``) whose file name contains ``pattern``."""
    return sorted(p for p in NOTEBOOKS.glob("*.ipynb") if pattern in p.name)


def keyless_env(env: dict[str, str] | None = None) -> dict[str, str]:
    """``env`` (default: this process's) without any vendor key, so no notebook can reach a vendor."""
    source = dict(os.environ if env is None else env)
    return {k: v for k, v in source.items() if not k.endswith("_API_KEY") and k not in {"ANTHROPIC_AUTH_TOKEN", "OPENAI_BASE_URL"}}


def reader_env(env: dict[str, str] | None = None) -> dict[str, str]:
    """The kernel's environment as a reader's: no vendor key, and nothing of a test run around it
    (under pytest the kernel would not show what child processes print, which a reader sees)."""
    return {k: v for k, v in keyless_env(env).items() if k != "PYTEST_CURRENT_TEST"}


def scratch_copy(path: Path, workdir: Path) -> Path:
    """Copy ``path`` into ``workdir/notebooks``, next to a link to ``notebooks/data``: the notebooks
    folder alone (nothing else of the repository), as a reader who downloads it has it."""
    (workdir / "notebooks").mkdir(parents=True, exist_ok=True)
    data = workdir / "notebooks" / "data"
    if (NOTEBOOKS / "data").is_dir() and not data.exists():
        data.symlink_to(NOTEBOOKS / "data", target_is_directory=True)
    copy = workdir / "notebooks" / path.name
    shutil.copy(path, copy)
    return copy


def execute(path: Path, *, workdir: Path, kernel_name: str = "python3", env: dict[str, str] | None = None) -> Any:
    """Run a copy of the notebook at ``path`` top to bottom in a fresh kernel; return the executed notebook."""
    import nbformat
    from nbclient import NotebookClient

    copy = scratch_copy(path, workdir)
    nb = nbformat.read(copy, as_version=4)
    client = NotebookClient(
        nb,
        timeout=CELL_TIMEOUT_S,
        kernel_name=kernel_name,
        allow_errors=True,  # run to the end, then report every problem at once
        store_widget_state=False,  # JupyterLab's default
        resources={"metadata": {"path": str(copy.parent)}},
    )
    client.execute(env=reader_env(env))
    nb.metadata["kernelspec"] = kernelspec(kernel_name)
    return nb


def kernelspec(kernel_name: str = "python3") -> dict[str, str]:
    """The notebook metadata of the installed kernel: JupyterLab rewrites any other, which marks a notebook modified on open."""
    from jupyter_client.kernelspec import KernelSpecManager

    spec = KernelSpecManager().get_kernel_spec(kernel_name)
    return {"display_name": spec.display_name, "language": spec.language, "name": kernel_name}


def _texts(output: dict[str, Any]) -> Iterator[str]:
    if output.get("output_type") == "stream":
        yield str(output.get("text", ""))
    for mime, value in (output.get("data") or {}).items():
        if mime.startswith("text/"):
            yield value if isinstance(value, str) else "".join(value)


def problems(nb: Any) -> list[str]:
    """One line per error output, per text on stderr (a warning or notice the reader did not ask
    for), or per output whose text shows a traceback or an error line."""
    found: list[str] = []
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        where = f"cell {index} ({cell.get('id', '?')})"
        for output in cell.get("outputs", []):
            if output.get("output_type") == "error":
                found.append(f"{where}: {output.get('ename')}: {output.get('evalue')}")
                continue
            if output.get("output_type") == "stream" and output.get("name") == "stderr":
                found.append(f"{where}: on stderr: {str(output.get('text', '')).strip()[:200]}")
                continue
            for text in _texts(output):
                match = _BAD_TEXT.search(text)
                if match:
                    line = text[match.start() :].splitlines()[0]
                    found.append(f"{where}: {line[:200]}")
                    break
    return found


def for_readers(nb: Any) -> Any:
    """``nb`` as a reader opens it without a kernel, maybe untrusted (a downloaded notebook is):
    pi widgets saved as their static pictures and text, as JupyterLab's save hook keeps them,
    every SVG as an image (an untrusted JupyterLab draws neither ``image/svg+xml`` nor inline SVG),
    and no output naming a session (the scratch run's sessions are not shipped)."""
    from pi_jupyter.notebook.durable.outputs import make_durable
    from pi_jupyter.notebook.durable.pictures import pictures_for_every_viewer
    from pi_jupyter.notebook.notebook_file import strip_bindings

    make_durable(nb, keep_saved_widgets=False)
    pictures_for_every_viewer(nb)
    strip_bindings(nb)  # the sessions they ran on are not shipped: a reader's first %%pi starts its own
    return nb


def regenerate(path: Path, *, workdir: Path) -> list[str]:
    """Execute ``path`` and write it back with its fresh outputs, made for readers (only when nothing went wrong)."""
    import nbformat

    nb = execute(path, workdir=workdir)
    found = problems(nb)
    if not found:
        nbformat.write(for_readers(nb), path)
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("pattern", nargs="?", default="", help="only notebooks whose file name contains this")
    parser.add_argument("--check", action="store_true", help="execute without saving; exit 1 on any problem")
    parser.add_argument("--pictures", action="store_true", help="also retake the pictures of the README and the manual (headless Chromium)")
    args = parser.parse_args(argv)
    paths = notebook_paths(args.pattern)
    if not paths:
        print(f"no notebook in {NOTEBOOKS} matches {args.pattern!r}", file=sys.stderr)
        return 2
    failed = False
    with tempfile.TemporaryDirectory(prefix="pi-notebooks-") as tmp:
        for path in paths:
            work = Path(tmp) / path.stem
            found = problems(execute(path, workdir=work)) if args.check else regenerate(path, workdir=work)
            status = "ok" if not found else f"{len(found)} problem(s)"
            print(f"{path.relative_to(ROOT)}: {status}")
            for line in found:
                print(f"  {line}")
            failed |= bool(found)
    if args.pictures and not failed:
        failed |= take_pictures() != 0
    return 1 if failed else 0


def take_pictures() -> int:
    """Run the browser test that photographs the notebooks, saving into ``docs/images``."""
    import subprocess

    env = {**keyless_env(), "PI_JUPYTER_PICTURES": "docs/images"}
    test = ROOT / "tests" / "browser" / "test_readme_pictures_browser.py"
    return subprocess.run([sys.executable, "-m", "pytest", str(test), "-q"], cwd=ROOT, env=env).returncode


if __name__ == "__main__":
    sys.exit(main())
