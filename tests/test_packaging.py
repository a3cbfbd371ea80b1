"""What a new user installs is enough for what the README tells them to run."""

from __future__ import annotations

import ast
import json
import re
import sys
from pathlib import Path

from IPython.core.inputtransformer2 import TransformerManager

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]

# import name -> distribution name, where they differ
DIST_OF = {"pi_jupyter": "pi-jupyter", "yaml": "pyyaml", "IPython": "ipython"}


def _requirement_names(reqs: list[str]) -> set[str]:
    return {re.split(r"[<>=!~;\[ ]", r, maxsplit=1)[0].strip().lower() for r in reqs}


def _notebook_imports(path: Path) -> set[str]:
    nb = json.loads(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for cell in nb["cells"]:
        if cell["cell_type"] != "code":
            continue
        source = "".join(cell["source"])
        if source.lstrip().startswith("%%"):
            continue
        # IPython's own transformer turns magics (`x = %pi new`) into the Python the kernel runs
        python = TransformerManager().transform_cell(source)
        for node in ast.walk(ast.parse(python)):
            if isinstance(node, ast.Import):
                names.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names.add(node.module.split(".")[0])
    return names


def test_the_notebook_extra_installs_every_module_the_shipped_notebooks_import():
    """README: `pip install -e '.[notebook]'` then open the quickstart. A missing import there is a broken first run."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    installed = _requirement_names(project["dependencies"]) | _requirement_names(project["optional-dependencies"]["notebook"])
    installed.add("pi-jupyter")
    notebooks = sorted((ROOT / "notebooks").glob("*.ipynb"))
    assert notebooks
    for path in notebooks:
        for module in _notebook_imports(path):
            if module in sys.stdlib_module_names:
                continue
            dist = DIST_OF.get(module, module).lower()
            assert dist in installed, f"{path.name} imports {module!r}, which neither the dependencies nor the 'notebook' extra install"


def test_binder_installs_what_the_notebook_extra_does():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    extra = _requirement_names(project["optional-dependencies"]["notebook"])
    binder = (ROOT / "binder" / "requirements.txt").read_text(encoding="utf-8").split()
    assert extra <= _requirement_names(binder)
