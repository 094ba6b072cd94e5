"""Issue #22, point 7: a plan file's policy applies or is refused (loaders/plan_policy.py).

A key the plan leaves out takes the scenario's; where the scenario leaves the choice to
the planner (`auto`) the plan's governs; where the scenario fixes it, a plan stating
another value is refused, one line naming the plan's key and the scenario file's key, in
evaluate, simulate, sweep --plan and the library alike (all read plans through
`load_plan`)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import yaml

import pdd_plan
from pdd_plan import api
from pdd_plan.errors import InputError
from pdd_plan.loaders.catalog import Catalog
from pdd_plan.loaders.plan_file import load_plan
from pdd_plan.loaders.scenario import load_scenario
from pdd_plan.model.caches.cache_tier import CacheOptions
from pdd_plan.model.scenario import ShortOutputCutoff

ROOT = Path(pdd_plan.__file__).parent.parent
PAPER = ROOT / "scenarios" / "pdd-paper.yaml"
PLAN_TEXT = (ROOT / "scenarios" / "plans" / "pdd-paper-pdd.yaml").read_text()
CDC_PLAN_TEXT = (ROOT / "scenarios" / "plans" / "pdd-paper-cdc_pd.yaml").read_text()
SHIPPED_POLICY = "policy: {rld_hit_threshold: 0.95, handoff: catch_up, short_output_cutoff: false}"
CAT = Catalog()


@pytest.fixture(scope="module")
def paper():
    return load_scenario(PAPER, CAT)


def _scenario(paper, **policy):
    return dataclasses.replace(paper, policy=dataclasses.replace(paper.policy, **policy))


def _plan(tmp_path, policy: str | None = SHIPPED_POLICY, text: str = PLAN_TEXT) -> Path:
    body = text.replace(SHIPPED_POLICY, policy or "")
    path = tmp_path / "plan.yaml"
    path.write_text(body)
    return path


def _refused(tmp_path, scenario, policy, plan_key, scenario_key) -> str:
    with pytest.raises(InputError) as err:
        load_plan(_plan(tmp_path, policy), scenario, CAT)
    line = str(err.value)
    assert len(err.value.problems) == 1 and "\n" not in line
    assert line.startswith(f"{tmp_path / 'plan.yaml'}: plan.policy.{plan_key}: found ")
    assert f"{scenario.source_file}'s {scenario_key}" in line, line
    return line


def test_the_shipped_plan_agrees_with_its_scenario(tmp_path, paper):
    policy = load_plan(_plan(tmp_path), paper, CAT).policy
    assert (policy.rld_hit_threshold, policy.handoff, policy.short_output_cutoff) == (
        0.95, "catch_up", False)  # fmt: skip


def test_a_cutoff_the_scenario_turns_off_is_refused(tmp_path, paper):
    """The issue's case: plan `short_output_cutoff: true`, scenario's cut-off disabled (its
    default): evaluated before as if false, the same figures and exit 0."""
    assert paper.policy.short_output_cutoff.enabled is False
    policy = "policy: {rld_hit_threshold: 0.95, short_output_cutoff: true}"
    line = _refused(tmp_path, paper, policy, "short_output_cutoff",
                    "policy.short_output_cutoff.enabled")  # fmt: skip
    assert "found true; expected false" in line


def test_a_cutoff_the_scenario_turns_on_is_refused_when_the_plan_says_off(tmp_path, paper):
    on = _scenario(paper, short_output_cutoff=ShortOutputCutoff(True))
    _refused(tmp_path, on, SHIPPED_POLICY, "short_output_cutoff",
             "policy.short_output_cutoff.enabled")  # fmt: skip
    # left out of the plan: the scenario's governs
    assert load_plan(_plan(tmp_path, "policy: {}"), on, CAT).policy.short_output_cutoff


def test_a_threshold_the_scenario_fixes(tmp_path, paper):
    fixed = _scenario(paper, rld_hit_threshold=0.9)
    line = _refused(tmp_path, fixed, SHIPPED_POLICY, "rld_hit_threshold",
                    "policy.rld_hit_threshold")  # fmt: skip
    assert "found 0.95; expected 0.9" in line and "auto" in line
    # absent from the plan: the scenario's 0.9, not the planner's default of 0.9 by chance
    fixed = _scenario(paper, rld_hit_threshold=0.8)
    plan = load_plan(_plan(tmp_path, "policy: {handoff: catch_up}"), fixed, CAT)
    assert plan.policy.rld_hit_threshold == 0.8
    # the scenario's `auto` (the shipped one): the plan's own threshold governs
    assert paper.policy.rld_hit_threshold is None
    assert load_plan(_plan(tmp_path), paper, CAT).policy.rld_hit_threshold == 0.95


def test_a_handoff_the_scenario_fixes(tmp_path, paper):
    one_shot = _scenario(paper, handoff="one_shot")
    _refused(tmp_path, one_shot, SHIPPED_POLICY, "handoff", "policy.handoff")
    assert load_plan(_plan(tmp_path, None), one_shot, CAT).policy.handoff == "one_shot"


def test_pdd_keys_are_not_checked_on_other_architectures(tmp_path, paper):
    """The threshold, handoff and cut-off route the relay: a CDC-PD plan has none."""
    fixed = _scenario(paper, rld_hit_threshold=0.9, handoff="one_shot")
    text = CDC_PLAN_TEXT + "  policy: {rld_hit_threshold: 0.5, handoff: catch_up}\n"
    load_plan(_plan(tmp_path, text=text), fixed, CAT)


def test_a_cache_bought_against_a_fixed_capacity_is_refused(tmp_path, paper):
    fixed = _scenario(paper, decode_cache_capacity_tokens=1e9)
    path = _plan(tmp_path, SHIPPED_POLICY + "\n  decode_cache: {tier: dram, tb: 2}")
    with pytest.raises(InputError) as err:
        load_plan(path, fixed, CAT)
    line = str(err.value)
    assert ": plan.decode_cache: found " in line
    assert f"{fixed.source_file}'s policy.decode_cache_capacity_tokens" in line


def test_a_plan_buying_no_cache_where_the_scenario_makes_it_a_purchase(tmp_path, paper):
    """Evaluated before with an unlimited free cache (the scenario's absent capacity)."""
    options = CacheOptions(("dram",), (0.0, 2.0), (CAT.cache_tiers["dram"].price_usd_per_tb_month,))
    bought = _scenario(paper, decode_cache=options)
    with pytest.raises(InputError) as err:
        load_plan(_plan(tmp_path), bought, CAT)
    assert ": plan.decode_cache: found nothing" in str(err.value)
    assert f"{bought.source_file}'s policy.decode_cache" in str(err.value)
    plan = load_plan(_plan(tmp_path, SHIPPED_POLICY + "\n  decode_cache: {tier: dram, tb: 2}"),
                     bought, CAT)  # fmt: skip
    assert plan.decode_cache.tb == 2


# ---- the same refusal in every command and the library -----------------------------------


@pytest.fixture
def conflicting(tmp_path) -> tuple[str, str]:
    plan = _plan(tmp_path, "policy: {rld_hit_threshold: 0.95, short_output_cutoff: true}")
    return str(PAPER), str(plan)


def _one_line(result, plan: str) -> str:
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2 and len(lines) == 1, result.stderr
    assert lines[0].startswith(f"error: {plan}: plan.policy.short_output_cutoff: found true")
    assert "policy.short_output_cutoff.enabled" in lines[0]
    return lines[0]


@pytest.mark.slow
@pytest.mark.parametrize(
    "command",
    [
        ("evaluate", "{s}", "{p}"),
        ("simulate", "{s}", "{p}", "--requests", "2222"),
        ("sweep", "{s}", "--plan", "{p}", "--vary", "workload.arrival_rate_per_s=40:50:10"),
    ],
    ids=lambda c: c[0],
)
def test_every_command_refuses_the_conflict(run_cli, conflicting, command):
    s, p = conflicting
    _one_line(run_cli(*(a.format(s=s, p=p) for a in command)), p)


def test_the_library_refuses_the_conflict(conflicting):
    s, p = conflicting
    with pytest.raises(InputError, match="plan.policy.short_output_cutoff: found true"):
        api.evaluate_plan(s, p)


@pytest.mark.slow
def test_a_sweep_point_that_fixes_another_value_fails_with_the_reason(run_cli, tmp_path):
    """`sweep --plan --vary policy.handoff=...`: the points where the scenario's handoff
    is not the plan's are refused with the line, not evaluated with the plan's."""
    plan = _plan(tmp_path)
    result = run_cli("sweep", str(PAPER), "--plan", str(plan), "--vary",
                     "policy.handoff=catch_up,one_shot", "--format", "json")  # fmt: skip
    assert result.returncode == 0, result.stderr
    points = {p["values"]["policy.handoff"]: p for p in yaml.safe_load(result.stdout)["points"]}
    assert "plan.policy" not in (points["catch_up"]["error"] or "")  # agrees: evaluated
    assert "plan.policy.handoff: found 'catch_up'" in points["one_shot"]["error"]
