"""Imports point one way: units, errors -> model -> loaders, plan, sim -> report -> the API
layer (api.py, sweep.py, report_build.py: orchestration over all of them) -> cli.
`model/` does no I/O: it never imports loaders, report, cli, yaml, pulp or rich."""

import ast
from pathlib import Path

import pdd_plan

PACKAGE = Path(pdd_plan.__file__).parent
API_LAYER = {"pdd_plan.api", "pdd_plan.sweep", "pdd_plan.report_build"}
FORBIDDEN = {
    "model": {"pdd_plan.loaders", "pdd_plan.plan", "pdd_plan.sim", "pdd_plan.report",
              "pdd_plan.cli", "yaml", "pulp", "rich", "typer", *API_LAYER},
    "loaders": {"pdd_plan.report", "pdd_plan.cli", "pdd_plan.plan", "pdd_plan.sim", *API_LAYER},
    "plan": {"pdd_plan.report", "pdd_plan.cli", "pdd_plan.sim", *API_LAYER},
    "sim": {"pdd_plan.report", "pdd_plan.cli", "pdd_plan.plan", *API_LAYER},
    "report": {"pdd_plan.cli", *API_LAYER},
}  # fmt: skip


def imports_of(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def violations(layer: str) -> list[str]:
    bad = []
    for path in (PACKAGE / layer).rglob("*.py"):
        for name in imports_of(path):
            if any(name == f or name.startswith(f + ".") for f in FORBIDDEN[layer]):
                bad.append(f"{path.name} imports {name}")
    return bad


def test_imports_point_one_way():
    for layer in FORBIDDEN:
        assert violations(layer) == [], layer


def test_the_scan_sees_imports(tmp_path):
    sample = tmp_path / "x.py"
    sample.write_text("from pdd_plan.cli import app\nimport yaml\n")
    assert imports_of(sample) == {"pdd_plan.cli", "yaml"}
