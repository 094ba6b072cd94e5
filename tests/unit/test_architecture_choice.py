"""`solve` chooses the architecture (issue #14, item 1): each architecture the scenario
allows is optimised alone and the best by the objective wins; the runner-up, the ratio
and the reason are reported; `--architecture` forces one and then nothing is compared.

The expectations come from each architecture's own optimum, solved here with
`--architecture`, and from the objective's definition (search.py's Goal), not from the
choice's output."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from pdd_plan.api import solve_scenario
from pdd_plan.plan import search
from pdd_plan.report.choice_text import recommendation
from pdd_plan.stages.solving import choose

RESOLUTION = (4, 6, 12)  # coarser than the CLI's: the same comparison, faster
TINY = Path(__file__).resolve().parents[1] / "sweep" / "tiny.yaml"


def bcr_value(metrics: dict, offered: float) -> float:
    """max_bcr's objective: goodput beyond 1.5 x offered earns nothing."""
    return min(metrics["goodput_rps"], 1.5 * offered) / metrics["cost_usd_per_hour"]


@pytest.fixture(scope="module")
def default_choice():
    chosen, _ = solve_scenario("default", resolution=RESOLUTION)
    forced = {
        c["architecture"]: solve_scenario("default", c["architecture"], resolution=RESOLUTION)[0]
        for c in chosen["architecture_choice"]["candidates"]
    }
    return chosen, forced


@pytest.mark.slow
def test_default_recommends_the_best_architecture_by_each_ones_own_optimum(default_choice):
    chosen, forced = default_choice
    offered = 20.0
    assert set(forced) == {"pdd", "cdc_pd", "idc_pd", "colocated"}  # what default allows
    ranked = sorted(
        (a for a in forced if forced[a]["metrics"]),
        key=lambda a: -bcr_value(forced[a]["metrics"], offered),
    )
    choice = chosen["architecture_choice"]
    assert choice["winner"] == ranked[0] == chosen["plan"]["architecture"]
    assert choice["runner_up"] == ranked[1]
    best, second = (bcr_value(forced[a]["metrics"], offered) for a in ranked[:2])
    assert choice["ratio"] == pytest.approx(best / second, rel=1e-3)
    assert chosen["metrics"]["cost_usd_per_hour"] == pytest.approx(
        forced[ranked[0]]["metrics"]["cost_usd_per_hour"]
    )


def test_on_default_pdd_is_not_the_answer_and_the_reason_names_the_costs(default_choice):
    chosen, forced = default_choice
    choice = chosen["architecture_choice"]
    assert choice["winner"] != "pdd"  # its relay instance costs more than it saves
    w, r = (forced[choice[k]]["metrics"]["cost_usd_per_hour"] for k in ("winner", "runner_up"))
    assert f"${w:,.2f}/h" in choice["reason"] and f"${r:,.2f}/h" in choice["reason"]
    by_arch = {c["architecture"]: c for c in choice["candidates"]}
    for arch, result in forced.items():
        assert by_arch[arch]["cost_usd_per_hour"] == pytest.approx(
            result["metrics"]["cost_usd_per_hour"]
        )


def test_the_json_keeps_the_design_shape(default_choice):
    chosen, _ = default_choice
    for key in ("scenario", "status", "plan", "metrics", "solver"):
        assert key in chosen
    assert set(chosen["architecture_choice"]) >= {
        "winner", "runner_up", "objective", "ratio", "reason", "candidates",
    }  # fmt: skip
    assert chosen["architecture_choice"]["objective"] == "max_bcr"


def pdd_only_wins() -> dict:
    """tiny.yaml with decode kept out of dc_a (so PDD or CDC-PD) and a TTFT P99 of 2 s: a
    prompt of 4000 tokens ships 4000 x 262,144 B x 8 = 8.4 Gbit of KV, 8 s at 1 Gbit/s
    per connection, and a tenth of the requests (hit below 0.7) ship most of theirs, so
    CDC-PD's first tokens miss the P99; PDD's relay emits theirs beside prefill."""
    data = yaml.safe_load(TINY.read_text(encoding="utf-8"))
    data["datacenters"][0]["roles"] = ["prefill", "relay_decode"]
    data["sla"] = {"ttft_p90_s": 5, "ttft_p99_s": 2, "tpot_p90_ms": 100}
    data["objective"] = {"kind": "max_bcr"}
    return data


@pytest.mark.slow
def test_pdd_wins_where_cdc_pd_cannot_meet_the_ttft(run_cli, tmp_path):
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(pdd_only_wins()))
    forced = run_cli("solve", "s.yaml", "--architecture", "cdc_pd", "--format", "json")
    assert forced.returncode == 3  # the independent expectation: CDC-PD has no plan
    result = run_cli("solve", "s.yaml", "--format", "json", "--time-limit", "10")
    assert result.returncode == 0, result.stderr
    answer = json.loads(result.stdout)
    choice = answer["architecture_choice"]
    assert choice["winner"] == "pdd" == answer["plan"]["architecture"]
    assert choice["runner_up"] is None and "CDC-PD" in choice["reason"]


@pytest.mark.slow
def test_architecture_forces_one_and_compares_nothing(run_cli, tmp_path):
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(pdd_only_wins()))
    result = run_cli("solve", "s.yaml", "--architecture", "pdd", "--format", "json")
    assert result.returncode == 0, result.stderr
    answer = json.loads(result.stdout)
    assert answer["plan"]["architecture"] == "pdd"
    assert "architecture_choice" not in answer


@pytest.mark.slow
def test_the_table_leads_with_the_recommendation(run_cli, tmp_path):
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(pdd_only_wins()))
    result = run_cli("solve", "s.yaml", "--time-limit", "10")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("recommended: PDD ")


def result(arch: str, cost: float, goodput: float) -> dict:
    return {"architecture": arch, "status": "optimal", "plan": {"architecture": arch},
            "metrics": {"cost_usd_per_hour": cost, "goodput_rps": goodput}}  # fmt: skip


class Scenario:
    """What the ranking reads of a scenario."""

    def __init__(self, kind: str, order=("pdd", "cdc_pd", "idc_pd", "colocated")):
        self.architectures = order
        self.objective = type("O", (), {"kind": kind})()
        self.workload = type("W", (), {"arrival_rate_per_s": 10.0})()


def test_bcr_counts_goodput_only_up_to_the_headroom():
    # 30 req/s at $100/h is worth 15 / 100 (1.5 x 10 offered), less than 14 req/s at $90/h
    s = Scenario("max_bcr")
    ranked = choose.rank(s, [result("pdd", 100.0, 30.0), result("cdc_pd", 90.0, 14.0)])
    assert [r["architecture"] for r in ranked] == ["cdc_pd", "pdd"]
    assert choose.BCR_HEADROOM == search.BCR_HEADROOM
    assert choose.GOODPUT_HEADROOM == search.GOODPUT_HEADROOM


def test_ties_go_to_the_cheaper_plan_then_to_the_listed_first():
    s = Scenario("max_bcr")
    # equal BCR (0.1): the cheaper wins, though listed second
    tied = [result("pdd", 100.0, 10.0), result("idc_pd", 50.0, 5.0)]
    assert choose.rank(s, tied)[0]["architecture"] == "idc_pd"
    # equal BCR and cost: the one listed first in the scenario wins
    same = [result("idc_pd", 100.0, 10.0), result("pdd", 100.0, 10.0)]
    assert choose.rank(s, same)[0]["architecture"] == "pdd"


def test_min_cost_ratio_is_the_runner_ups_cost_over_the_winners():
    s = Scenario("min_cost")
    ranked = choose.rank(s, [result("pdd", 300.0, 10.0), result("cdc_pd", 200.0, 10.0)])
    assert ranked[0]["architecture"] == "cdc_pd"
    assert choose.ratio(s, ranked[0], ranked[1]) == pytest.approx(1.5)
    text = recommendation(
        {
            "winner": "cdc_pd",
            "runner_up": "pdd",
            "objective": "min_cost",
            "ratio": 1.5,
            "reason": "why",
        }  # fmt: skip
    )
    assert text == "recommended: CDC-PD, the runner-up, PDD, costs 1.5x as much. Why: why"


def test_compare_ends_with_the_same_verdict(default_choice):
    """compare over the same results (given as known: nothing solved again) names the
    same winner and runner-up as solve."""
    from pdd_plan.api import compare_architectures

    chosen, forced = default_choice
    compared = compare_architectures("default", resolution=RESOLUTION, known=forced)
    verdict = compared["architecture_choice"]
    assert verdict["winner"] == chosen["architecture_choice"]["winner"]
    assert verdict["runner_up"] == chosen["architecture_choice"]["runner_up"]


CHOSEN = {
    "plan": {"architecture": "cdc_pd"},
    "architecture_choice": {
        "winner": "cdc_pd", "runner_up": "idc_pd", "objective": "max_bcr", "ratio": 1.28,
        "reason": "CDC-PD costs $224.43/h against IDC-PD's $287.28/h",
    },
}  # fmt: skip


def test_the_report_summary_leads_with_which_and_why():
    from pdd_plan.report.markdown import _architecture

    text = _architecture(CHOSEN).replace("\\", "")  # as rendered: Markdown escapes dropped
    assert text.startswith("**CDC-PD** recommended: 1.28x the BCR of the runner-up, IDC-PD.")
    assert "$224.43/h against IDC-PD's $287.28/h" in text
    forced = _architecture({"plan": {"architecture": "pdd"}})
    assert forced.startswith("PDD, as asked")


def test_the_html_cards_name_the_architecture():
    from pdd_plan.report.html import _architecture_card

    card = _architecture_card(CHOSEN)
    assert "CDC-PD recommended" in card and "1.28x the BCR of IDC-PD" in card
    assert "as asked" in _architecture_card({"plan": {"architecture": "pdd"}})
