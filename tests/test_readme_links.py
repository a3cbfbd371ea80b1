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
