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


def test_docs_build_strict_with_readme_as_front_page_and_api_from_docstrings(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NO_MKDOCS_2_WARNING": "1"}
    site = tmp_path / "site"
    command = [sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(site)]
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    front = (site / "index.html").read_text(encoding="utf-8")
    assert "Two commands" in front  # the README is the front page
    api = (site / "api" / "index.html").read_text(encoding="utf-8")
    assert "Move to another node of the tree" in api  # Agent.checkout's docstring
    magics = (site / "magics" / "index.html").read_text(encoding="utf-8")
    assert "--continue" in magics and "checkout ID" in magics  # options and commands come from the code
    for page in ("session-format", "experiments", "extensions"):
        assert (site / page / "index.html").exists()
    assert not (site / "hooks.py").exists()


def test_a_missing_readme_section_stops_the_build_with_its_name():
    with pytest.raises(ValueError, match="no section 'Nowhere to be found'"):
        _hooks()._readme_section("Nowhere to be found", "https://example.org/repo")


def test_repository_links_in_the_readme_point_at_the_repository():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "](notebooks/quickstart.ipynb)" in readme  # the README links its notebooks relatively (GitHub resolves them)
    text = _hooks()._readme_for_site("https://example.org/repo")
    assert "](https://example.org/repo/blob/main/notebooks/quickstart.ipynb)" in text
    # no link left that the site cannot serve (the pictures are in docs/images, part of the site)
    assert re.findall(r"\]\((?!https?://|#|mailto:|images/)[^)]+\)", text) == []
    for picture in re.findall(r"\]\(images/([^)]+)\)", text):
        assert (ROOT / "docs" / "images" / picture).is_file(), picture


def test_without_a_repository_url_the_site_has_no_link_to_a_repository_that_is_not_known():
    text = _hooks()._readme_for_site("")
    assert "[quickstart](notebooks/quickstart.ipynb)" not in text and "quickstart" in text  # the link's text stays
    assert re.findall(r"\]\((?!https?://|#|mailto:|images/)[^)]+\)", text) == []
    assert "OWNER/pi-jupyter" not in text and "/blob/main/" not in text
