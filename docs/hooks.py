"""MkDocs hooks: the README is the front page, and the reference parts come from the code.

``index.md`` is generated from ``README.md`` at build time (one source of truth). In it, links
to the manual (``docs/tree.md``) and its pictures (``docs/images/...``) become the site's own,
and links to other files of the repository (``notebooks/...``) point at the repository, because
the site holds only the docs. A page links to a repository file the way GitHub reads it from
``docs/`` (``../notebooks/quickstart.ipynb``), and the site does the same with that link.

Without a repository URL (``PI_JUPYTER_REPO_URL`` unset when the site is built) such a link would
lead nowhere, so it becomes its text: the site ships no broken link.

In a page, ``{{ pi_subcommands }}`` and ``{{ pi_cell_options }}`` are replaced by the ``%pi``
command list and the ``%%pi`` options the magics define, and ``{{ cli_reference }}`` by the
``--help`` of ``pi-jupyter`` and of each of its commands.
"""

from __future__ import annotations

import io
import os
import re
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
# a relative markdown link to something that is not a page of the site: [text](path) or [text](path#anchor)
_REPO_LINK = re.compile(r"(!?)\[([^\]]*)\]\((?!https?://|#|mailto:)([^)\s]+)\)")


def _to_repository(label: str, bang: str, target: str, repo_url: str) -> str:
    base = repo_url.rstrip("/") + "/blob/main/" if repo_url else ""
    return f"{bang}[{label}]({base}{target})" if base else label


def readme_for_site(repo_url: str, text: str | None = None) -> str:
    """The README as the site's front page: the manual's pages and pictures from the site, other files from ``repo_url``."""
    if text is None:
        text = (ROOT / "README.md").read_text(encoding="utf-8")

    def link(m: re.Match[str]) -> str:
        bang, label, target = m.groups()
        if target.startswith("docs/"):
            return f"{bang}[{label}]({target[len('docs/') :]})"  # a page or a picture of the site
        return _to_repository(label, bang, target, repo_url)

    return _REPO_LINK.sub(link, text)


def page_for_site(markdown: str, repo_url: str) -> str:
    """A manual page as the site shows it: what comes from the code filled in, repository links resolved."""

    def link(m: re.Match[str]) -> str:
        bang, label, target = m.groups()
        if target.startswith("../"):  # a file of the repository, as GitHub reads the link from docs/
            return _to_repository(label, bang, target[len("../") :], repo_url)
        return m.group(0)

    markdown = _REPO_LINK.sub(link, markdown)
    if "{{ pi_subcommands }}" in markdown:
        from pi_jupyter.notebook.magics import SUBCOMMANDS

        markdown = markdown.replace("{{ pi_subcommands }}", "```text\n" + SUBCOMMANDS.rstrip() + "\n```")
    if "{{ pi_cell_options }}" in markdown:
        markdown = markdown.replace("{{ pi_cell_options }}", _cell_options())
    if "{{ cli_reference }}" in markdown:
        markdown = markdown.replace("{{ cli_reference }}", _cli_reference())
    return markdown


def _cell_options() -> str:
    from pi_jupyter.notebook.magics import PiMagics

    parser = PiMagics.pi.parser
    lines = []
    for action in parser._actions:  # argparse keeps no public list of options
        if not action.option_strings or action.dest == "help":
            continue
        flags = ", ".join(f"`{flag}`" for flag in action.option_strings)
        lines.append(f"| {flags} | {action.help or ''} |")
    return "| option | meaning |\n|---|---|\n" + "\n".join(lines)


def _help(argv: list[str]) -> str:
    from pi_jupyter.cli.main import build_parser

    out = io.StringIO()
    with redirect_stdout(out):
        try:
            build_parser(argv).parse_args(argv)
        except SystemExit:  # --help prints, then exits
            pass
    return out.getvalue().rstrip()


def _cli_reference() -> str:
    from pi_jupyter.cli.main import COMMANDS

    columns = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "80"  # argparse wraps to the terminal; the page has one width
    try:
        parts = ["```text\n$ pi-jupyter --help\n" + _help(["--help"]) + "\n```"]
        for name in COMMANDS:
            parts.append(f"## `pi-jupyter {name}`\n\n```text\n$ pi-jupyter {name} --help\n" + _help([name, "--help"]) + "\n```")
    finally:
        if columns is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = columns
    return "\n\n".join(parts)


def on_files(files: Any, config: Any) -> Any:
    """Add ``index.md`` made from the README."""
    from mkdocs.structure.files import File

    files.append(File.generated(config, "index.md", content=readme_for_site(config.repo_url or "")))
    return files


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """Fill the placeholders with what the code defines, and resolve links to the repository."""
    if page.file.src_uri == "index.md":
        return markdown  # made from the README by on_files
    return page_for_site(markdown, config.repo_url or "")
