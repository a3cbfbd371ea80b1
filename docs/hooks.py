"""MkDocs hooks: the README is the front page, and the magic reference comes from the code.

``index.md`` is generated from ``README.md`` at build time (one source of truth); links in it
to files of the repository (``notebooks/...``, ``pi_jupyter/...``) point at the repository,
because the site only holds the docs. ``{{ pi_subcommands }}`` and ``{{ pi_cell_options }}`` in
a page are replaced by the ``%pi`` command list and the ``%%pi`` options the magics define, and
``{{ readme_section: HEADING }}`` by that ``##`` section of the README (without its heading line).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parents[1]
# a relative markdown link to something that is not a page of the site: [text](path) or [text](path#anchor)
_REPO_LINK = re.compile(r"(!?)\[([^\]]*)\]\((?!https?://|#|mailto:)([^)\s]+)\)")


def _readme_for_site(repo_url: str) -> str:
    """The README for the site: pictures from the site, links to repository files at ``repo_url``.

    Without a repository URL (``PI_JUPYTER_REPO_URL`` unset when the site is built) such a link
    would lead nowhere, so it becomes its text: the site ships no broken link.
    """
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    base = repo_url.rstrip("/") + "/blob/main/" if repo_url else ""
    text = text.replace("](docs/images/", "](images/")  # the pictures are part of the site

    def link(m: re.Match[str]) -> str:
        bang, label, target = m.groups()
        if target.startswith("images/"):
            return m.group(0)
        return f"{bang}[{label}]({base}{target})" if base else label

    return _REPO_LINK.sub(link, text)


def on_files(files: Files, config: Any) -> Files:
    """Add ``index.md`` made from the README."""
    files.append(File.generated(config, "index.md", content=_readme_for_site(config.repo_url or "")))
    return files


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


_README_SECTION = re.compile(r"\{\{ readme_section: (.+?) \}\}")


def _readme_section(heading: str, repo_url: str) -> str:
    text = _readme_for_site(repo_url)
    match = re.search(rf"^(#{{2,4}}) {re.escape(heading)}\n", text, flags=re.M)
    if match is None:
        raise ValueError(f"docs: README.md has no section {heading!r}")
    level = len(match.group(1))
    end = re.compile(rf"^#{{2,{level}}} ", flags=re.M).search(text, match.end())
    return "## " + heading + "\n" + text[match.end() : end.start() if end else len(text)]


def on_page_markdown(markdown: str, page: Any, config: Any, files: Files) -> str:
    """Fill the placeholders with what the code and the README define."""
    markdown = _README_SECTION.sub(lambda m: _readme_section(m.group(1), config.repo_url or ""), markdown)
    if "{{ pi_subcommands }}" in markdown:
        from pi_jupyter.notebook.magics import SUBCOMMANDS

        markdown = markdown.replace("{{ pi_subcommands }}", "```text\n" + SUBCOMMANDS.rstrip() + "\n```")
    if "{{ pi_cell_options }}" in markdown:
        markdown = markdown.replace("{{ pi_cell_options }}", _cell_options())
    return markdown
