"""The solver's modules import one way: each only from the rows below its own in docs/layout.md."""

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CORE = ROOT / "neurok_blender" / "core"


def layers() -> dict[str, int]:
    """Module -> row in the layout's picture, 0 the bottom row."""
    text = (ROOT / "docs" / "layout.md").read_text()
    block = re.search(r"<!-- core layers: top row first -->\n(.*?)<!-- end of core layers -->", text, re.S).group(1)
    rows = [re.split(r"\s{2,}", line.strip())[0].split() for line in block.strip().splitlines()]
    return {module: len(rows) - 1 - index for index, row in enumerate(rows) for module in row}


def core_imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    return {node.module.split(".")[0] for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module}


def test_every_core_module_is_in_the_picture_once():
    rows = layers()
    modules = {path.stem for path in CORE.glob("*.py")} - {"__init__"}
    assert set(rows) == modules


def test_core_modules_import_only_from_lower_rows():
    rows = layers()
    upward = [(path.stem, imported) for path in CORE.glob("*.py") if path.stem != "__init__"
              for imported in core_imports(path) if rows[imported] >= rows[path.stem]]
    assert not upward, f"imports that go up or sideways in docs/layout.md's picture: {upward}"
