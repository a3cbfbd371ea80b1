"""A fake installed distribution advertising ``pi_jupyter.extensions`` entry points, for subprocess tests."""

from __future__ import annotations

import os
from pathlib import Path


def install_extensions(tmp_path: Path, entry_points: dict[str, str], module_source: str) -> dict[str, str]:
    """Write module ``runs_ext`` and a ``runs-ext`` dist-info declaring ``entry_points`` (name -> ``module:attr``).

    Returns the environment (``PYTHONPATH``) under which a child process sees them as installed.
    """
    site = tmp_path / "site"
    info = site / "runs_ext-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: runs-ext\nVersion: 1.0\n")
    lines = "".join(f"{name} = {target}\n" for name, target in entry_points.items())
    (info / "entry_points.txt").write_text("[pi_jupyter.extensions]\n" + lines)
    (site / "runs_ext.py").write_text(module_source)
    return {"PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])}
