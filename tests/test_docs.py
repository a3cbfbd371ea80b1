"""The reference documentation builds from the repository with warnings as errors (``mkdocs build --strict``)."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.docs  # under CI=true (which installs the docs extra) a skip here is a failure: see conftest


@pytest.fixture(autouse=True)
def _docs_extra() -> None:
    """Skip, naming the extra, where the docs extra is not installed (``pip install -e '.[test]'`` only)."""
    try:
        import material  # noqa: F401 - mkdocs-material
        import mkdocs  # noqa: F401
        import mkdocstrings  # noqa: F401
    except ImportError as exc:
        pytest.skip(f"needs the docs extra (pip install -e '.[docs]'): {exc}")


def _hooks():
    spec = importlib.util.spec_from_file_location("docs_hooks", ROOT / "docs" / "hooks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


MANUAL = ("install", "notebook", "tree", "world", "experiments", "teaching", "models", "shell", "session-file", "safety",
          "extensions", "speed", "limits", "design", "api", "magics", "cli")  # fmt: skip
"""The manual's pages (``docs/NAME.md``): the README links each one."""


def test_docs_build_strict_with_readme_as_front_page_and_reference_from_the_code(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NO_MKDOCS_2_WARNING": "1"}
    site = tmp_path / "site"
    command = [sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(site)]
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr  # --strict: a broken link or anchor between pages fails
    front = (site / "index.html").read_text(encoding="utf-8")
    assert "Two commands" in front  # the README is the front page
    for page in MANUAL:
        assert (site / page / "index.html").exists(), page
        assert f'href="{page}/"' in front, f"the front page does not link {page}"  # the README's docs/{page}.md, on the site
    api = (site / "api" / "index.html").read_text(encoding="utf-8")
    assert "Move to another node of the tree" in api  # Agent.checkout's docstring
    magics = (site / "magics" / "index.html").read_text(encoding="utf-8")
    assert "--continue" in magics and "checkout ID" in magics  # options and commands come from the code
    cli = (site / "cli" / "index.html").read_text(encoding="utf-8")
    from pi_jupyter.cli.main import COMMANDS

    for name in COMMANDS:
        assert f"usage: pi-jupyter {name}" in cli, name  # each command's --help, from its parser
    assert not (site / "hooks.py").exists()


def test_the_api_reference_covers_what_pi_jupyter_exports():
    import pi_jupyter

    directives = "\n".join(
        line for page in (ROOT / "docs").glob("*.md") for line in page.read_text(encoding="utf-8").splitlines() if line.startswith(":::")
    )
    missing = [name for name in pi_jupyter.__all__ if name != "__version__" and not re.search(rf"\.{name}$", directives, re.M)]
    assert not missing, f"no reference (::: directive) for pi_jupyter.{missing}"


def test_repository_links_in_the_readme_point_at_the_repository():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "](notebooks/quickstart.ipynb)" in readme  # the README links its notebooks relatively (GitHub resolves them)
    text = _hooks().readme_for_site("https://example.org/repo")
    assert "](https://example.org/repo/blob/main/notebooks/quickstart.ipynb)" in text
    assert "](tree.md)" in text  # a page of the manual is a page of the site
    # no link left that the site cannot serve (the pages and pictures are in docs/, the site's own)
    local = re.findall(r"\]\((?!https?://|#|mailto:)([^)#]+)", text)
    assert local and all((ROOT / "docs" / target).is_file() for target in local), local


def test_a_page_links_a_repository_file_as_github_reads_it_from_docs():
    page = "See [the lecture](../notebooks/teaching-agent-memory.ipynb) and [the tree](tree.md)."
    hooks = _hooks()
    on_site = hooks.page_for_site(page, "https://example.org/repo")
    assert "[the lecture](https://example.org/repo/blob/main/notebooks/teaching-agent-memory.ipynb)" in on_site
    assert "[the tree](tree.md)" in on_site
    assert hooks.page_for_site(page, "") == "See the lecture and [the tree](tree.md)."  # no URL known: the text, no broken link


def test_without_a_repository_url_the_site_has_no_link_to_a_repository_that_is_not_known():
    text = _hooks().readme_for_site("")
    assert "[quickstart](notebooks/quickstart.ipynb)" not in text and "quickstart" in text  # the link's text stays
    assert re.findall(r"\]\((?!https?://|#|mailto:|images/|[\w-]+\.md)[^)]+\)", text) == []
    assert "OWNER/pi-jupyter" not in text and "/blob/main/" not in text
