"""The HiGHS options the planner sets reach the installed HiGHS (PuLP passes unknown names
on without an error, so a misspelt option would silently do nothing), and turning the
feasibility-jump heuristic off leaves the proven optimum of a MILP unchanged."""

from __future__ import annotations

import highspy
import pulp
import pytest

from pdd_plan.plan import formulate
from pdd_plan.plan.formulate import HIGHS_OPTIONS, MIP_GAP_REL


@pytest.mark.parametrize("name", sorted(HIGHS_OPTIONS))
def test_each_option_is_known_to_the_installed_highs(name):
    highs = highspy.Highs()
    highs.setOptionValue("output_flag", False)
    assert highs.setOptionValue(name, HIGHS_OPTIONS[name]) == highspy.HighsStatus.kOk
    status, value = highs.getOptionValue(name)
    assert status == highspy.HighsStatus.kOk and value == HIGHS_OPTIONS[name]


def _knapsack() -> tuple[pulp.LpProblem, list[pulp.LpVariable]]:
    """Max 13a + 9b + 7c + 5d s.t. 6a + 4b + 3c + 2d <= 17, a..d integers in 0..3: the
    LP relaxation is fractional, so branch and bound has work to do."""
    prob = pulp.LpProblem("knapsack", pulp.LpMaximize)
    xs = [prob.add_variable(n, 0, 3, cat="Integer") for n in "abcd"]
    values, weights = (13, 9, 7, 5), (6, 4, 3, 2)
    prob += pulp.lpSum(v * x for v, x in zip(values, xs, strict=True))
    prob += pulp.lpSum(w * x for w, x in zip(weights, xs, strict=True)) <= 17
    return prob, xs


def test_the_optimum_is_the_enumerated_one_with_the_heuristic_off():
    import itertools

    values, weights = (13, 9, 7, 5), (6, 4, 3, 2)
    best = max(
        sum(v * x for v, x in zip(values, p, strict=True))
        for p in itertools.product(range(4), repeat=4)
        if sum(w * x for w, x in zip(weights, p, strict=True)) <= 17
    )
    assert best == 40
    for options in ({}, HIGHS_OPTIONS):
        prob, _ = _knapsack()
        prob.solve(pulp.HiGHS(msg=False, gapRel=MIP_GAP_REL, **options))
        assert pulp.LpStatus[prob.status] == "Optimal"
        assert pulp.value(prob.objective) == pytest.approx(best)


def test_solve_milp_passes_the_options(monkeypatch):
    seen = {}
    real = pulp.HiGHS

    def spy(**kwargs):
        seen.update(kwargs)
        return real(**kwargs)

    monkeypatch.setattr(formulate.pulp, "HiGHS", spy)
    prob, _ = _knapsack()
    assert formulate.solve_milp(formulate.Formulation(prob, {}, {}, {}, None, None)) == "Optimal"
    assert all(seen.get(k) == v for k, v in HIGHS_OPTIONS.items())
