"""Glob patterns (for the ``grep`` and ``find`` tools) and ``.gitignore`` rules (matched by ``pathspec``).

Used by skill discovery (as pi honours ``.gitignore``, ``.ignore`` and ``.fdignore`` in skill
roots) and by the ``grep`` and ``find`` tools, which cannot assume ripgrep or fd.

Ignore files are compiled by ``pathspec``'s ``GitIgnoreSpec``, which follows git: blank lines
and ``#`` comments are skipped, ``!`` re-includes, a trailing ``/`` matches directories only, a
pattern containing ``/`` is anchored at the directory of its ignore file (otherwise it matches
at any depth), ``*`` and ``?`` never match ``/``, ``**`` spans directories, ``[...]`` is a
character class and ``\\`` escapes. The last matching rule wins, a deeper ignore file's rules
coming after its ancestors'. Rules of an ignore file apply only below its own directory (pi's
matcher turns ``foo`` in ``sub/.gitignore`` into the anchored ``sub/foo``; here it also matches
``sub/x/foo``, as git does). Walkers prune ignored directories, so a file below an ignored
directory is never re-included, as in git.
"""

from __future__ import annotations

import os
import re
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass

import pathspec

__all__ = ["IGNORE_FILE_NAMES", "IgnoreMatcher", "IgnoreRule", "compile_glob", "find_git_root", "glob_to_regex"]

IGNORE_FILE_NAMES: tuple[str, ...] = (".gitignore", ".ignore", ".fdignore")
"""The ignore files pi's skill discovery reads."""


def _translate(pattern: str, braces: bool) -> str:
    """Regex source for a glob ``pattern`` (no anchoring, no leading ``/``)."""
    out: list[str] = []
    i, n = 0, len(pattern)
    depth = 0  # open brace groups
    while i < n:
        c = pattern[i]
        if c == "\\" and i + 1 < n:
            out.append(re.escape(pattern[i + 1]))
            i += 2
            continue
        if c == "*":
            j = i
            while j < n and pattern[j] == "*":
                j += 1
            stars = j - i
            at_start = i == 0 or pattern[i - 1] == "/"
            at_end = j == n or pattern[j] == "/"
            if stars >= 2 and at_start and at_end:
                if j == n:
                    out.append(".*")  # "a/**" -> everything inside a
                    i = j
                else:
                    out.append("(?:.*/)?")  # "**/" -> zero or more directories
                    i = j + 1
                continue
            out.append("[^/]*")
            i = j
            continue
        if c == "?":
            out.append("[^/]")
            i += 1
            continue
        if c == "[":
            j = i + 1
            if j < n and pattern[j] in "!^":
                j += 1
            if j < n and pattern[j] == "]":
                j += 1
            while j < n and pattern[j] != "]":
                j += 1
            if j >= n:
                out.append(re.escape(c))  # an unclosed "[" is a literal
                i += 1
                continue
            body = pattern[i + 1 : j]
            negate = body[:1] in ("!", "^")
            if negate:
                body = body[1:]
            body = body.replace("\\", "\\\\")
            out.append(f"[^/{body}]" if negate else f"(?!/)[{body}]")
            i = j + 1
            continue
        if braces and c == "{":
            depth += 1
            out.append("(?:")
            i += 1
            continue
        if braces and c == "," and depth:
            out.append("|")
            i += 1
            continue
        if braces and c == "}" and depth:
            depth -= 1
            out.append(")")
            i += 1
            continue
        out.append(re.escape(c))
        i += 1
    if depth:
        raise ValueError(f"unbalanced '{{' in glob pattern {pattern!r}")
    return "".join(out)


def glob_to_regex(pattern: str, *, braces: bool = True) -> str:
    """Regex source matching a whole path for the glob ``pattern`` (``{a,b}`` when ``braces``)."""
    return f"^(?:{_translate(pattern, braces)})$"


def compile_glob(pattern: str, *, braces: bool = True) -> re.Pattern[str]:
    """Compile a glob (``*``, ``?``, ``**``, ``[...]``, ``{a,b}``) to a regex matching whole paths.

    Raises ``ValueError`` naming the pattern when it cannot be compiled.
    """
    try:
        return re.compile(glob_to_regex(pattern, braces=braces), re.DOTALL)
    except re.error as exc:
        raise ValueError(f"invalid glob pattern {pattern!r}: {exc}") from None


@dataclass(frozen=True)
class IgnoreRule:
    """The rules of one ignore file, compiled by ``pathspec``. ``base`` is its file's directory, relative and posix."""

    spec: pathspec.GitIgnoreSpec
    base: str

    def verdict(self, rel: str, is_dir: bool) -> bool | None:
        """``True``: ``rel`` is ignored, ``False``: re-included by a ``!`` rule, ``None``: no rule matches."""
        if self.base:
            if not rel.startswith(self.base + "/"):
                return None
            rel = rel[len(self.base) + 1 :]
        return self.spec.check_file(rel + "/" if is_dir else rel).include


def parse_ignore_lines(lines: Iterable[str], base: str = "") -> IgnoreRule | None:
    """Compile the lines of one ignore file (``None`` when none is a rule); unusable patterns are skipped."""
    lines = list(lines)
    try:
        spec = pathspec.GitIgnoreSpec.from_lines(lines)
    except ValueError:  # pathspec's GitWildMatchPatternError names one bad line; git skips such lines
        spec = pathspec.GitIgnoreSpec.from_lines([line for line in lines if _usable(line)])
    if not any(p.include is not None for p in spec.patterns):
        return None
    return IgnoreRule(spec=spec, base=base)


def _usable(line: str) -> bool:
    try:
        pathspec.GitIgnoreSpec.from_lines([line])
    except ValueError:
        return False
    return True


class IgnoreMatcher:
    """An immutable set of ignore rules; :meth:`descend` returns a matcher with one more directory's rules.

    Paths given to :meth:`ignored` are posix and relative to the directory the walk started
    in; ``prefix`` is that directory relative to the anchor the rules' bases are relative to
    (non-empty when rules were read from ancestors, e.g. up to a git root).
    """

    def __init__(self, rules: Sequence[IgnoreRule] = (), prefix: str = "", file_names: Sequence[str] = IGNORE_FILE_NAMES) -> None:
        self.rules: tuple[IgnoreRule, ...] = tuple(rules)
        self.prefix = prefix.strip("/")
        self.file_names = tuple(file_names)

    def _anchor_rel(self, rel: str) -> str:
        rel = rel.strip("/")
        if not self.prefix:
            return rel
        return f"{self.prefix}/{rel}" if rel else self.prefix

    def ignored(self, rel: str, is_dir: bool = False) -> bool:
        """True when the last rule matching ``rel`` excludes it (a deeper ignore file's rules come later)."""
        if not self.rules:
            return False
        path = self._anchor_rel(rel)
        for rule in reversed(self.rules):
            verdict = rule.verdict(path, is_dir)
            if verdict is not None:
                return verdict
        return False

    def with_rules(self, lines: Iterable[str], rel_dir: str = "") -> IgnoreMatcher:
        """A matcher with ``lines`` added, as if read from an ignore file in ``rel_dir`` (relative to the walk root)."""
        new = parse_ignore_lines(lines, self._anchor_rel(rel_dir))
        if new is None:
            return self
        return IgnoreMatcher((*self.rules, new), self.prefix, self.file_names)

    def descend(self, abs_dir: str, rel_dir: str, present: Collection[str] | None = None) -> IgnoreMatcher:
        """A matcher with the rules of ``abs_dir``'s ignore files added (``rel_dir``: its path from the walk root).

        ``present``: the directory's entry names when the caller has listed it already, so
        ignore files that are not there are not even tried.
        """
        lines: list[str] = []
        for name in self.file_names:
            if present is not None and name not in present:
                continue
            path = os.path.join(abs_dir, name)
            try:
                with open(path, encoding="utf-8", errors="replace") as fh:
                    lines.extend(fh.read().split("\n"))
            except OSError:
                continue
        return self.with_rules(lines, rel_dir) if lines else self

    @classmethod
    def for_root(cls, root: str, *, file_names: Sequence[str] = IGNORE_FILE_NAMES, from_git_root: bool = False) -> IgnoreMatcher:
        """The matcher for a walk starting at ``root``: its own ignore files, and with
        ``from_git_root`` also those of its ancestors up to the enclosing git repository's root
        (as ripgrep and fd read them). Rules in subdirectories are added by :meth:`descend`."""
        root = os.path.abspath(root)
        anchor = root
        chain = [root]
        if from_git_root:
            git_root = find_git_root(root)
            if git_root and git_root != root:
                anchor = git_root
                chain = []
                d = root
                while True:
                    chain.append(d)
                    if d == git_root:
                        break
                    d = os.path.dirname(d)
                chain.reverse()
        prefix = os.path.relpath(root, anchor).replace(os.sep, "/")
        matcher = cls((), "" if prefix == "." else prefix, file_names)
        for d in chain:
            rel_from_anchor = os.path.relpath(d, anchor).replace(os.sep, "/")
            rel_from_anchor = "" if rel_from_anchor == "." else rel_from_anchor
            lines: list[str] = []
            for name in file_names:
                try:
                    with open(os.path.join(d, name), encoding="utf-8", errors="replace") as fh:
                        lines.extend(fh.read().split("\n"))
                except OSError:
                    continue
            new = parse_ignore_lines(lines, rel_from_anchor)
            if new is not None:
                matcher = cls((*matcher.rules, new), matcher.prefix, file_names)
        return matcher


def find_git_root(start: str) -> str | None:
    """The nearest directory at or above ``start`` that holds ``.git``, or ``None``."""
    d = os.path.abspath(start)
    while True:
        if os.path.exists(os.path.join(d, ".git")):
            return d
        parent = os.path.dirname(d)
        if parent == d:
            return None
        d = parent
