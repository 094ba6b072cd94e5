"""Imports point one way and never in a circle.

Layers, lowest first: errors -> model -> loaders, plan, sim -> report (formatting) ->
stages (the application: solving -> sweeping -> reporting; calibrating apart) -> api (the
face) -> cli. Inside `model/`, the subjects (compute, workload, queueing, caches, network,
decode) import each other one way and from the model's root only `units`; the root
assembles them. `model/` does no I/O: it never imports loaders, report, cli, yaml, pulp or
rich. Every import counts, the lazy ones inside functions too."""

import ast
from pathlib import Path

import pdd_plan

PACKAGE = Path(pdd_plan.__file__).parent
ABOVE_MODEL = ("pdd_plan.loaders", "pdd_plan.plan", "pdd_plan.sim", "pdd_plan.report")
APPLICATION = ("pdd_plan.stages", "pdd_plan.api", "pdd_plan.cli")
FORBIDDEN = {
    "model": {*ABOVE_MODEL, *APPLICATION, "yaml", "pulp", "rich", "typer"},
    "loaders": {"pdd_plan.report", "pdd_plan.plan", "pdd_plan.sim", *APPLICATION},
    "plan": {"pdd_plan.report", "pdd_plan.sim", *APPLICATION},
    "sim": {"pdd_plan.report", "pdd_plan.plan", *APPLICATION},
    "report": {*APPLICATION},
    "stages": {"pdd_plan.api", "pdd_plan.cli"},
    "stages/solving": {"pdd_plan.stages.sweeping", "pdd_plan.stages.reporting",
                       "pdd_plan.stages.calibrating"},
    "stages/sweeping": {"pdd_plan.stages.reporting", "pdd_plan.stages.calibrating"},
    "stages/calibrating": {"pdd_plan.stages.solving", "pdd_plan.stages.sweeping",
                           "pdd_plan.stages.reporting"},
}  # fmt: skip
MODEL_SUBJECTS = ("compute", "workload", "queueing", "caches", "network", "decode")
MODEL_BASE = "pdd_plan.model.units"  # the one root module the subjects may import


def module_name(path: Path) -> str:
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
    return ".".join(parts)


def imports_of(path: Path) -> set[str]:
    """Every module `path` imports (`from P import m` counts as P.m where m is a module)."""
    tree = ast.parse(path.read_text())
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            for a in node.names:
                sub = f"{node.module}.{a.name}"
                where = PACKAGE.parent / sub.replace(".", "/")
                if where.with_suffix(".py").exists() or (where / "__init__.py").exists():
                    names.add(sub)
    return names


def violations(layer: str) -> list[str]:
    bad = []
    for path in (PACKAGE / layer).rglob("*.py"):
        for name in imports_of(path):
            if any(name == f or name.startswith(f + ".") for f in FORBIDDEN[layer]):
                bad.append(f"{path.relative_to(PACKAGE)} imports {name}")
    return bad


def test_imports_point_one_way():
    for layer in FORBIDDEN:
        assert violations(layer) == [], layer


def _module_graph() -> dict[str, set[str]]:
    modules = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    return {m: {n for n in imports_of(p) if n in modules and n != m} for m, p in modules.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan, iterative)."""
    index, low, on_stack, stack, found = {}, {}, set(), [], []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        top = stack.pop()
                        on_stack.discard(top)
                        component.append(top)
                        if top == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
            elif child not in index:
                index[child] = low[child] = len(index)
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(graph[child]))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return found


def test_no_module_imports_itself_through_others():
    assert cycles(_module_graph()) == []


def test_the_model_subjects_import_one_way_and_only_units_from_the_root():
    graph = _module_graph()
    subject_of = {}
    for m in graph:
        parts = m.split(".")
        if len(parts) > 2 and parts[1] == "model" and parts[2] in MODEL_SUBJECTS:
            subject_of[m] = parts[2]
    subject_graph = {s: set() for s in MODEL_SUBJECTS}
    bad = []
    for m, subject in subject_of.items():
        for n in graph[m]:
            if n in subject_of and subject_of[n] != subject:
                subject_graph[subject].add(subject_of[n])
            elif n.startswith("pdd_plan.model") and n not in subject_of and n != MODEL_BASE:
                bad.append(f"{m} imports {n}")
    assert bad == []
    assert cycles(subject_graph) == []


def test_the_root_holds_only_the_face():
    root = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert root == ["__init__.py", "__main__.py", "api.py", "errors.py"]


def test_the_scan_sees_imports(tmp_path):
    sample = tmp_path / "x.py"
    sample.write_text("from pdd_plan.cli import app\nimport yaml\n")
    assert imports_of(sample) >= {"pdd_plan.cli", "pdd_plan.cli.app", "yaml"}


def test_the_cycle_finder_finds_a_circle_and_nothing_in_a_line():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": {"c"}, "c": set()}) == []
