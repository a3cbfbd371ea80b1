"""Which names of a namespace belong to the world, and which ones a piece of code may change in place.

Rebinding a name (``x = 1``, ``del x``, ``import x``) is seen by comparing the namespace before
and after a call. A change in place (``df["c"] = 1``, ``xs.append(2)``, ``df.drop(columns="c",
inplace=True)``, ``clean(df)`` with ``clean`` defined in the notebook) leaves the name bound to
the same object, so the code is read for it: a name the code assigns into, calls a changing
method on, or hands to a notebook function is a *candidate*, saved before the call and
compared after it; so is a global a notebook function the code calls changes in place (its
source is read the same way, and the functions it calls in turn). A change made through a
name the world saw is followed through the names that share its objects (see
:mod:`.aliases`). A change made inside a library's function, or by a thread, is not seen (the
limit Kishu's runtime tracing lifts at a cost on every access).

The user's own cells are read the same way (:func:`user_candidates`): a name one of them may
have changed in place is compared by content before the world trusts it again.
"""

from __future__ import annotations

import ast
import builtins
import types
from collections.abc import Iterable, Mapping
from typing import Any

IPYTHON_NAMES = frozenset({"In", "Out", "get_ipython", "exit", "quit", "open"})

MUTATING_METHODS = frozenset(
    {
        "append", "extend", "insert", "pop", "popitem", "remove", "clear", "update", "setdefault", "sort", "reverse",
        "add", "discard", "difference_update", "intersection_update", "symmetric_difference_update",
        "fill", "resize", "put", "itemset", "setflags", "partition", "byteswap",
        "__setitem__", "__delitem__", "__iadd__", "setattr", "write", "seek", "truncate", "close",
        "set_axis", "insert_column", "reset_index", "drop_duplicates", "fillna", "dropna", "replace", "rename",
        "sort_values", "sort_index", "set_index", "mask", "where", "clip", "interpolate", "eval", "query",
        "fit", "partial_fit", "fit_transform", "fit_predict", "set_params", "load_state_dict", "train", "step",
    }
)  # fmt: skip
"""Methods that change their object (the pandas ones only with ``inplace=True``, checked separately)."""

_PANDAS_INPLACE_ONLY = frozenset(
    {"reset_index", "drop_duplicates", "fillna", "dropna", "replace", "rename", "sort_values", "sort_index", "set_index",
     "mask", "where", "clip", "interpolate", "eval", "query", "set_axis"}
)  # fmt: skip

INPLACE_FUNCTIONS = frozenset({"shuffle", "copyto", "put", "place", "fill_diagonal", "putmask", "setattr", "delattr", "exec"})
"""Library functions that change an argument (``np.random.shuffle(a)``, ``setattr(obj, ...)``)."""


_BUILTINS = frozenset(dir(builtins))


def world_name(name: str) -> bool:
    """A name the world follows: public (no leading ``_``) and not one of IPython's own."""
    return not name.startswith("_") and name not in IPYTHON_NAMES


def _base(node: ast.AST) -> str | None:
    """``df`` for ``df``, ``df.x``, ``df["c"]``, ``df.loc[0, "a"]``."""
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Starred)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _is_inplace(call: ast.Call) -> bool:
    return any(k.arg == "inplace" and not (isinstance(k.value, ast.Constant) and not k.value.value) for k in call.keywords)


def candidates(code: str, namespace: Mapping[str, Any]) -> set[str]:
    """Names of ``namespace`` that ``code`` may change in place (see the module notes); empty for code that does not parse."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return set()
    return {n for n in _changed(tree, namespace) if world_name(n)}


def _changed(tree: ast.AST, namespace: Mapping[str, Any]) -> set[str]:
    found = _in_place(tree, namespace)
    called = {n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
    found |= _through_functions(called, namespace)
    return {n for n in found if n in namespace}


def user_candidates(code: str, namespace: Mapping[str, Any], known: Iterable[str]) -> set[str]:
    """What a user's cell may have changed in place: :func:`candidates`, or every name of ``known`` when the code cannot be read.

    Code that runs text (``exec``, ``eval``) or reaches the namespace as a dict (``globals()``)
    may change anything.
    """
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return set()  # IPython syntax (a magic, a shell escape) is not Python; a cell that does not parse did not run
    if any(isinstance(n, ast.Name) and n.id in ("exec", "eval", "globals", "vars") for n in ast.walk(tree)):
        return set(known)
    return _changed(tree, namespace)  # ``_mine.append(1)`` too: a name of the user's may share an object with one of the world's


def called_on(code: str) -> set[str]:
    """Names whose methods ``code`` calls (``conn.execute(...)``): what it may change where a comparison cannot tell."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return set()
    return {name for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and (name := _base(n.func.value))}


_READ: dict[Any, frozenset[str]] = {}


def _through_functions(called: set[str], namespace: Mapping[str, Any], depth: int = 4) -> set[str]:
    """The globals the notebook functions ``called`` (and those they call) change in place."""
    found: set[str] = set()
    seen: set[str] = set()
    todo = set(called)
    for _ in range(depth):
        nxt: set[str] = set()
        for name in todo - seen:
            seen.add(name)
            fn = namespace.get(name)
            if not _defined_in_notebook(fn):
                continue
            changed, calls = _function_effects(fn)
            found |= changed
            nxt |= calls
        todo = nxt
    return {n for n in found if not isinstance(namespace.get(n), (types.FunctionType, types.ModuleType, type))}


def _function_effects(fn: Any) -> tuple[frozenset[str], frozenset[str]]:
    """``(globals it changes in place, names it calls)`` of a notebook function, read from its source (all its globals without one)."""
    code = fn.__code__
    cached = _READ.get(code)
    if cached is not None:
        return cached, _READ.get((code, "calls"), frozenset())
    local = set(code.co_varnames) | set(code.co_cellvars)
    try:
        import inspect
        import textwrap

        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
        changed = frozenset(n for n in _in_place(tree, {}, any_name=True) if n not in local)
        declared = {g for n in ast.walk(tree) if isinstance(n, ast.Global) for g in n.names}
        changed |= frozenset(declared)
        calls = frozenset(n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name))
    except (OSError, TypeError, SyntaxError, ValueError):
        changed = frozenset(_all_names(code))  # no source: every global it names may be changed
        calls = changed
    if len(_READ) > 4096:
        _READ.clear()
    _READ[code] = changed
    _READ[(code, "calls")] = calls
    return changed, calls


def _all_names(code: Any) -> set[str]:
    out = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            out |= _all_names(const)
    return out


def _in_place(tree: ast.AST, namespace: Mapping[str, Any], *, any_name: bool = False) -> set[str]:
    """Names ``tree`` changes in place (assigned into, a changing method, handed to a notebook function)."""
    defined_here = {n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete, ast.For, ast.AsyncFor, ast.With)):
            targets: list[ast.AST] = []
            if isinstance(node, ast.Assign):
                targets = list(node.targets)
            elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
                targets = [node.target]
            elif isinstance(node, ast.Delete):
                targets = list(node.targets)
            elif isinstance(node, (ast.For, ast.AsyncFor)):
                targets = [node.target]
            else:
                targets = [i.optional_vars for i in node.items if i.optional_vars is not None]
            for t in targets:
                for sub in ast.walk(t):
                    if isinstance(sub, (ast.Attribute, ast.Subscript)):
                        name = _base(sub)
                        if name:
                            found.add(name)
                if isinstance(node, ast.AugAssign) and isinstance(t, ast.Name):
                    found.add(t.id)  # xs += [1] changes a list in place
        elif isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute):
                name = _base(func.value)
                method = func.attr
                changes = method in MUTATING_METHODS and method not in _PANDAS_INPLACE_ONLY
                if name and (changes or _is_inplace(node)):
                    found.add(name)
            callee = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
            notebook_fn = isinstance(func, ast.Name) and (
                func.id in defined_here or _defined_in_notebook(namespace.get(func.id)) or (any_name and func.id not in _BUILTINS)
            )
            if notebook_fn or callee in INPLACE_FUNCTIONS:
                for arg in [*node.args, *(k.value for k in node.keywords)]:
                    name = _base(arg)
                    if name:
                        found.add(name)
            for k in node.keywords:
                if k.arg == "out":
                    name = _base(k.value)
                    if name:
                        found.add(name)
    return found


def _defined_in_notebook(obj: Any) -> bool:
    return isinstance(obj, types.FunctionType) and getattr(obj, "__module__", None) == "__main__"
