"""The README and the shipped notebooks link nowhere broken, and the first command says what root needs."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _links(text: str) -> list[str]:
    return re.findall(r"\]\((https?://[^)\s]+)\)", text) + re.findall(r'href="(https?://[^"]+)"', text)


def test_no_link_points_at_a_placeholder_repository():
    for path in [ROOT / "README.md", *sorted((ROOT / "notebooks").glob("*.ipynb"))]:
        bad = [u for u in _links(path.read_text(encoding="utf-8")) if "OWNER" in u or "/REPO" in u]
        assert not bad, f"{path.name} links to a repository that is not known yet: {bad}"


def test_the_first_command_says_that_root_needs_allow_root():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    first = text.index("jupyter lab notebooks/quickstart.ipynb")
    assert "--allow-root" in text[first : first + 600]


def test_a_newcomer_finds_install_quickstart_and_the_four_uses_on_the_first_screens():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    lines = text.splitlines()
    assert len(lines) <= 220, f"the README is {len(lines)} lines: the rest belongs in the manual (docs/)"
    first = "\n".join(lines[:40])  # about two screens
    assert ".venv/bin/pip install -e '.[notebook]'" in first and "jupyter lab notebooks/quickstart.ipynb" in first
    assert "bash .ci/run" in first
    for page in ("notebook", "tree", "teaching", "experiments"):  # the four uses, each a page of the manual
        assert f"](docs/{page}.md)" in text, page


def test_every_relative_link_of_the_readme_leads_to_a_file_of_the_repository():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    targets = re.findall(r"\]\((?!https?://|#|mailto:)([^)#\s]+)", text)
    assert targets
    missing = [t for t in targets if not (ROOT / t).is_file()]
    assert not missing, missing


def test_the_readme_gives_the_test_command_that_ci_runs():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    ci = [line.strip() for line in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()]
    command = next(line for line in reversed(ci) if line and not line.startswith("#"))
    assert command == "python -m pytest"
    assert f"`.ci/run` ends with the test command itself, `{command}`" in readme
