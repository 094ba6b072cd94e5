"""Issue #14 item 14, the points left: explain's binding limits and its default
architecture, the figures' digits, the report's assumption rows, no reference to files
users do not have."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.cli.test_friction import PLAN, TINY, run80, scenario_at
from tests.conftest import REPO

# --- explain -------------------------------------------------------------------------


def _explanation(constraints: list[dict]) -> dict:
    """The smallest result `print_explanation` prints, with these constraint rows."""
    return {
        "scenario": "hand",
        "architecture": "pdd",
        "objective": {"kind": "min_cost", "metric": "cost_usd_per_hour", "value": 10.0},
        "milp": {"rate_rps": 2.0, "utilization_cap_frac": 0.85},
        "constraints": constraints,
        "relaxations": [],
        "roles": {"utilization_frac": {"prefill": 0.5}, "binding_role": "prefill"},
        "pruned_candidates": [],
    }


def test_explain_shows_a_binding_limit_without_a_negative_slack(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "120")
    from pdd_plan.cli.explain_cmd import print_explanation

    rows = [
        # the MILP's linear estimate past the cap: binding, verified by evaluate
        {"constraint": "prefill_capacity_covers_its_demand", "family": "capacity",
         "slack": -1.25, "limit": 20.0, "cover": True, "unit": "req/s", "binding": True},
        {"constraint": "lines_within_the_allowed_count", "family": "line",
         "slack": 3.0, "limit": 4.0, "cover": False, "unit": "lines", "binding": False},
    ]  # fmt: skip
    print_explanation(_explanation(rows))
    out = capsys.readouterr().out
    cells = {r[1].strip(): [c.strip() for c in r[2:6]]
             for r in (line.split("│") for line in out.splitlines()) if len(r) > 5}  # fmt: skip
    # family, headroom, limit, binds: headroom 0, not -1.25
    assert cells["prefill_capacity_covers_its_demand"] == ["capacity", "0", "needs 20 req/s", "yes"]
    assert cells["lines_within_the_allowed_count"] == ["line", "3 lines", "4 lines", "no"]
    assert "headroom" in out and "slack" not in out.split("Limits")[1].split("┡")[0]


def test_the_reports_explain_table_shows_no_negative_headroom():
    from pdd_plan.report.markdown_analysis import _explain_dict

    rows = [{"constraint": "prefill_capacity_covers_its_demand", "family": "capacity",
             "slack": -1.25, "unit": "req/s", "binding": True}]  # fmt: skip
    text = "\n".join(_explain_dict({"constraints": rows}))
    assert "| `prefill_capacity_covers_its_demand` | capacity | 0 req/s |" in text
    assert "-1.25" not in text and "headroom" in text


def test_explain_without_architecture_explains_what_solve_recommends(tmp_path):
    solved = run80(tmp_path, "solve", str(TINY), "--format", "json")
    assert solved.returncode == 0, solved.stderr
    winner = json.loads(solved.stdout)["architecture_choice"]["winner"]
    done = run80(tmp_path, "explain", str(TINY), "--format", "json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["architecture"] == winner
    assert result["architecture_choice"]["winner"] == winner
    text = run80(tmp_path, "explain", str(TINY), "--architecture", "idc_pd")
    assert text.returncode == 0 and "tiny: idc_pd plan" in " ".join(text.stdout.split())
    assert "recommends" not in text.stdout  # forced: no claim it was chosen


# --- the report's assumption rows -----------------------------------------------------


def _starts(rows) -> list[str]:
    return [a for a, _ in rows]


def _has(rows, start: str) -> bool:
    return any(a.startswith(start) for a in _starts(rows))


# the rows about one model family, the line, or the relay and handoff
MODEL_ROWS = ("DeepSeek-V4 indexer", "DeepSeek-V4 CSA/HCA", "MTP layers",
              "Linear-attention", "MiniMax-M1")  # fmt: skip
LINE_ROWS = ("Line prices", "The WAN is in steady state")
PDD_ROWS = ("Eager RLD tokens", "Relay overflow", "The handoff's fixed engine cost")
# mechanisms neither scenario turns on (a finite decode-side cache, striping, the cut-off):
# their rows stay out of every plan's report (#22 point 8; tests/report/test_issue22_report.py)
UNUSED_ROWS = ("MD's decode-side cache", "Striping:", "Cut-off threshold")


def test_a_dense_model_planned_in_one_datacenter_gets_no_foreign_assumption(catalog):
    from pdd_plan.loaders.scenario import load_scenario
    from pdd_plan.report.assumption_scope import applicable
    from pdd_plan.report.assumptions import ASSUMPTIONS

    s = load_scenario(TINY, catalog)  # Qwen3-32B: dense GQA, BF16 weights and KV
    rows = applicable(s, catalog.model_for(s), "idc_pd")
    for start in (*MODEL_ROWS, *LINE_ROWS, *PDD_ROWS, *UNUSED_ROWS, "KV dtype applies",
                  "Embeddings, LM"):  # fmt: skip
        assert not _has(rows, start), start
    # what holds for every plan stays, in the assumptions table's order
    for start in ("Input length, output length", "One GPU type", "The slot wait"):
        assert _has(rows, start), start
    assert rows == [r for r in ASSUMPTIONS if r in rows]
    # the same model as PDD: the line, relay and handoff rows come back
    pdd = applicable(s, catalog.model_for(s), "pdd")
    assert all(_has(pdd, start) for start in (*LINE_ROWS, *PDD_ROWS))
    assert not any(_has(pdd, start) for start in UNUSED_ROWS)


def test_deepseek_v4_gets_its_own_rows_and_not_other_families(catalog):
    from pdd_plan.loaders.scenario import load_scenario, resolve_scenario_path
    from pdd_plan.report.assumption_scope import applicable

    s = load_scenario(resolve_scenario_path("default"), catalog)  # DeepSeek-V4-Pro, FP8 KV
    rows = applicable(s, catalog.model_for(s), "pdd")
    for start in ("DeepSeek-V4 indexer", "DeepSeek-V4 CSA/HCA", "KV dtype applies", *PDD_ROWS):
        assert _has(rows, start), start
    assert not _has(rows, "Linear-attention") and not _has(rows, "MiniMax-M1")


def test_every_scope_rule_still_finds_its_row():
    from pdd_plan.report.assumption_scope import RULES
    from pdd_plan.report.assumptions import ASSUMPTIONS

    for start, _ in RULES:
        assert sum(a.startswith(start) for a, _ in ASSUMPTIONS) == 1, start


def test_the_report_section_says_how_many_rows_are_left_out():
    from pdd_plan.report.assumptions import ASSUMPTIONS
    from pdd_plan.report.markdown_analysis import assumptions_section

    text = "\n".join(assumptions_section(list(ASSUMPTIONS[:3])))
    assert f"{len(ASSUMPTIONS) - 3} more" in text and ASSUMPTIONS[3][0] not in text


# --- no reference to files users do not have ------------------------------------------

# the team's own notes and the repository's benchmark scripts: not in a user's install
UNSHIPPED = ("pdd-system", "design.md", "modeling-notes", "benchmarks/", "../shared",
             "agreement.py")  # fmt: skip


def _unshipped_in(text: str) -> list[str]:
    return [name for name in UNSHIPPED if name in text]


@pytest.mark.slow
def test_the_main_commands_name_no_unshipped_document(tmp_path):
    plan = str(REPO / "scenarios" / "plans" / "pdd-paper-pdd.yaml")
    runs = [
        ("scenario", "validate", "pdd-paper"),
        ("scenario", "validate", "pdd-paper", "--format", "json"),
        ("scenario", "validate", "default", "--format", "json"),
        ("evaluate", "pdd-paper", plan),
        ("evaluate", "pdd-paper", plan, "--format", "json"),
        ("simulate", "pdd-paper", plan, "--requests", "2222"),
        ("solve", "pdd-paper", "--architecture", "pdd", "--format", "json", "--bom", "b.csv"),
        ("solve", str(TINY), "--architecture", "pdd", "--out", "out"),
        ("explain", str(TINY), "--architecture", "pdd"),
    ]
    for args in runs:
        done = run80(tmp_path, *args)
        assert done.returncode == 0, (args, done.stderr)
        assert _unshipped_in(done.stdout + done.stderr) == [], args
    for written in [tmp_path / "b.csv", *(tmp_path / "out").iterdir()]:  # BOMs, report, ...
        assert _unshipped_in(written.read_text()) == [], written.name


@pytest.mark.slow
def test_no_user_visible_string_in_the_package_names_an_unshipped_document():
    """Every string constant of the package but docstrings (warnings, captions, sources
    shown in a table): the commands above cannot reach every warning."""
    import ast

    import pdd_plan

    found = []
    for path in Path(pdd_plan.__file__).parent.rglob("*.py"):
        tree = ast.parse(path.read_text())
        docs = {id(n.body[0].value) for n in ast.walk(tree)
                if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef))
                and n.body and isinstance(n.body[0], ast.Expr)}  # fmt: skip
        for node in ast.walk(tree):
            if (isinstance(node, ast.Constant) and isinstance(node.value, str)
                    and id(node) not in docs and _unshipped_in(node.value)):  # fmt: skip
                found.append(f"{path.name}:{node.lineno}")
    # the agreement suite's own case files are read from the repository, never shown
    assert [f for f in found if not f.startswith("agreement.py:")] == []


# --- digits --------------------------------------------------------------------------


@pytest.mark.slow
def test_simulate_prints_the_offered_rate_to_three_digits(tmp_path):
    plan = tmp_path / "plan.yaml"
    plan.write_text(yaml.safe_dump({"plan": PLAN}))
    scenario = scenario_at(tmp_path, 1.23456)
    done = run80(tmp_path, "simulate", str(scenario), str(plan), "--requests", "2222")
    assert done.returncode == 0, done.stderr
    assert "simulated at 1.23 req/s" in done.stdout and "1.23456" not in done.stdout


@pytest.mark.slow
def test_compare_shows_cents_for_small_costs(tmp_path):
    done = run80(tmp_path, "compare", str(TINY), "--format", "json")
    assert done.returncode == 0, done.stderr
    costs = [r["metrics"]["cost_usd_per_hour"] for r in json.loads(done.stdout)["architectures"]
             if r.get("metrics")]  # fmt: skip
    text = run80(tmp_path, "compare", str(TINY))
    # tiny's plans cost about $8-13/h: whole dollars would hide a 6 % difference
    for cost in costs:
        assert f"{cost:,.2f}" in text.stdout, cost
