"""The import graph keeps DESIGN.md's layers: no arrow runs up, no circle, no reaching into private state.

Walks every module of the package with ``ast`` (lazy imports inside functions and imports under
``TYPE_CHECKING`` included) and checks three rules:

1. a module imports only modules of its own layer or of the layers above it (messages is the top);
   ``agent`` and ``views`` sit side by side and do not import each other;
2. no cycle among modules (package ``__init__`` modules count as the modules they are);
3. no module reads or writes another module's private attribute (``obj._name`` where ``_name``
   is not defined in the module doing it) or imports another module's private name.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "pi_jupyter"  # read, not imported: a broken import is still reported

LAYERS: dict[str, int] = {
    "messages": 0,
    "session": 1,
    "compaction": 2,
    "resources": 2,
    "world": 2,  # what the tools change, recorded and restored; needs only the session
    "providers": 3,
    "agent": 4,
    "views": 4,
    "extensions": 5,  # example extensions, built on the agent's extension API
    "experiment": 5,
    "notebook": 6,
    "cli": 6,
}
"""DESIGN.md's layer order: a module may import its own layer and the ones with a smaller number."""

SIDE_BY_SIDE = [{"agent", "views"}, {"compaction", "resources"}, {"compaction", "world"}, {"resources", "world"}, {"notebook", "cli"}]
"""Layers of equal rank that must not import each other."""


def _modules() -> dict[str, Path]:
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE.parent).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


MODULES = _modules()


def _is_package(name: str) -> bool:
    return MODULES[name].name == "__init__.py"


def _imports(name: str, tree: ast.AST) -> list[tuple[str, int, list[str]]]:
    """``(module imported, line, names taken from it)`` for every import in ``tree``."""
    package = name if _is_package(name) else name.rpartition(".")[0]
    found: list[tuple[str, int, list[str]]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("pi_jupyter"):
                    found.append((alias.name, node.lineno, []))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if not target.startswith("pi_jupyter"):
                continue
            names = [a.name for a in node.names]
            submodules = [f"{target}.{n}" for n in names if f"{target}.{n}" in MODULES]
            found.extend((sub, node.lineno, []) for sub in submodules)
            rest = [n for n in names if f"{target}.{n}" not in MODULES]
            if rest or not submodules:
                found.append((target, node.lineno, rest))
    return [(t, line, names) for t, line, names in found if t in MODULES]


TREES = {name: ast.parse(path.read_text(encoding="utf-8"), str(path)) for name, path in MODULES.items()}
GRAPH = {name: _imports(name, tree) for name, tree in TREES.items()}
TREES_BY_PATH = {MODULES[name]: tree for name, tree in TREES.items()}


def _layer(name: str) -> str | None:
    parts = name.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in LAYERS else None


def _where(name: str, line: int) -> str:
    return f"{MODULES[name].relative_to(PACKAGE.parent)}:{line}"


def test_every_folder_has_a_layer():
    folders = {p.parent.name for p in PACKAGE.glob("*/__init__.py")}
    assert folders - set(LAYERS) == set(), "a new folder needs its place in LAYERS (and in DESIGN.md)"


def test_no_import_runs_up_the_layers():
    wrong = []
    for name, imports in GRAPH.items():
        mine = _layer(name)
        if mine is None:
            continue  # the package root assembles everything
        for target, line, _ in imports:
            theirs = _layer(target)
            if theirs is None or theirs == mine:
                continue
            if LAYERS[theirs] > LAYERS[mine]:
                wrong.append(f"{_where(name, line)}: {mine} imports {target} ({theirs} is a layer below)")
            elif any({mine, theirs} == pair for pair in SIDE_BY_SIDE):
                wrong.append(f"{_where(name, line)}: {mine} imports {target} ({theirs} sits beside it)")
    assert not wrong, "\n".join(wrong)


def test_no_import_cycle():
    edges = {name: sorted({t for t, _, _ in imports if t != name}) for name, imports in GRAPH.items()}
    # Tarjan's strongly connected components; any with more than one module is a cycle
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for v in edges:
        if v not in index:
            visit(v)
    assert not cycles, "\n".join(" -> ".join(c) for c in cycles)


def _private_names_defined(tree: ast.AST) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name.startswith("_"):
            names.add(node.name)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) and node.attr.startswith("_"):
            names.add(node.attr)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) and node.id.startswith("_"):
            names.add(node.id)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith("_"):
            names.add(node.value)  # __slots__ entries
    return names


def _private(attr: str) -> bool:
    """``_name``, but not ``__dunder__`` nor IPython's display protocol (``_repr_html_``, ``_ipython_display_``)."""
    return attr.startswith("_") and not attr.endswith("_")


def test_no_module_reaches_into_another_modules_private_state():
    wrong = []
    defined_in = {name: _private_names_defined(tree) for name, tree in TREES.items()}
    for name, tree in TREES.items():
        own = defined_in[name]
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and _private(node.attr):
                base = node.value
                if isinstance(base, ast.Name) and base.id in ("self", "cls"):
                    continue
                if node.attr in own:
                    continue
                if isinstance(base, ast.Name) and base.id not in own and _is_stdlib_module(tree, base.id):
                    continue
                wrong.append(f"{_where(name, node.lineno)}: .{node.attr}")
        for target, line, names in GRAPH[name]:
            wrong.extend(f"{_where(name, line)}: imports {n} from {target}" for n in names if _private(n))
    assert not wrong, "\n".join(wrong)


def _is_stdlib_module(tree: ast.AST, local: str) -> bool:
    """``local`` is a name bound by ``import x`` of a module outside the package (``sys._getframe``)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if (alias.asname or alias.name.split(".")[0]) == local and not alias.name.startswith("pi_jupyter"):
                    return True
    return False


@pytest.mark.parametrize("layer", sorted(k for k, rank in LAYERS.items() if rank < LAYERS["notebook"]))
def test_nothing_above_the_notebook_imports_ipython_or_widgets(layer):
    wrong = []
    for name, tree in TREES.items():
        if _layer(name) != layer:
            continue
        for node in ast.walk(tree):
            mods = []
            if isinstance(node, ast.Import):
                mods = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                mods = [node.module]
            wrong.extend(f"{_where(name, node.lineno)}: {m}" for m in mods if m.split(".")[0] in ("IPython", "ipywidgets", "anywidget"))
    assert not wrong, "\n".join(wrong)


def test_every_folder_says_its_job():
    missing = [str(p.relative_to(PACKAGE.parent)) for p in sorted(PACKAGE.glob("*/__init__.py")) if not ast.get_docstring(TREES_BY_PATH[p])]
    assert not missing, "a folder's __init__.py says its job in a docstring: " + ", ".join(missing)
