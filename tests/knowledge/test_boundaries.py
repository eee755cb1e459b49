"""Knowledge is below grounding: grounding uses knowledge's selectors, never the other way round."""

from __future__ import annotations

import ast
from pathlib import Path

from django.conf import settings


def _imports(path: Path) -> set[str]:
    modules: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            modules |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            modules.add(node.module)
    return modules


def test_knowledge_imports_nothing_from_grounding() -> None:
    root = Path(settings.BASE_DIR) / "apps" / "knowledge"
    offenders = {
        str(path.relative_to(root)): module
        for path in root.rglob("*.py")
        for module in _imports(path)
        if module.split(".")[:2] == ["apps", "grounding"]
    }
    assert offenders == {}
