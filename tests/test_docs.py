"""The docs describe the package as it is: every module is placed in docs/architecture.md, and
every work the code cites by key is in docs/references.md."""

from __future__ import annotations

import re
from importlib.metadata import distribution
from pathlib import Path

DOCS = Path(__file__).resolve().parents[1] / "docs"


def _modules() -> list[str]:
    """'flexmbs/kernels/inertia.py'-style paths of every installed module (from the RECORD)."""
    out = []
    for f in distribution("flexmbs").files or []:
        parts = Path(str(f)).parts
        if f.suffix == ".py" and parts[0] in ("flexmbs", "flexmbs_fmu", "flexmbs_laws") and parts[-1] not in ("__init__.py", "__main__.py"):
            out.append("/".join(parts))
    return out


def test_architecture_page_places_every_module() -> None:
    text = (DOCS / "architecture.md").read_text()
    missing = []
    for path in _modules():
        package, name = path.split("/", 1)[0], path.rsplit("/", 1)[-1]
        rel = path.split("/", 1)[1]
        # a module is placed when its path inside the package, or its name in a row of its package, appears
        if rel not in text and not (package == "flexmbs_fmu" and name in text):
            missing.append(path)
    assert not missing, f"docs/architecture.md does not say where these live: {missing}"


def test_cited_keys_are_in_the_references() -> None:
    refs = (DOCS / "references.md").read_text()
    keys = {m.group(1) for m in re.finditer(r"^\| ([^|]+?) \|", refs, re.M)} - {"key", "---"}
    for key in ("Huang 1998", "He 1993", "Kraus et al. 2001", "Verlinden et al.", "Hwang 2005"):
        assert key in keys
    root = Path(__file__).resolve().parents[1]
    for path in [*(root / "src").rglob("*.py"), *(root / "fmu_src").rglob("*.py"), *(root / "models").rglob("*.yaml")]:
        assert not re.search(r"\bseed 00\d", path.read_text()), f"{path}: cite the work (docs/references.md), not a seed number"
