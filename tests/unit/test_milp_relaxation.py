"""The MILP's relaxation chooses each role's GPU type whole (issue #24 follow-up of #22's
placement rule): a role served by one type has exactly one chosen binary in any integer
plan, so the formulation says `sum of chosen = 1`. With `<= 1` the LP relaxation spread the
choice to n / MAX_INSTANCES, which, with the placement links, made HiGHS branch about 11x
longer (17 GPU types x 16 shapes: 2.1 s of HiGHS against 0.19 s before the placement rule;
benchmarks/solve.py --types 17,51 --shapes 16 prints the wall time)."""

import pulp
import pytest

from pdd_plan.loaders.scenario import load_scenario, resolve_scenario_path
from pdd_plan.model.decode.mixed_pool import MIXABLE_ROLES
from pdd_plan.plan.candidates import default_policy
from pdd_plan.plan.elastic import milp_inputs
from pdd_plan.plan.formulate import formulate


@pytest.fixture(scope="module")
def relaxed(catalog):
    s = load_scenario(resolve_scenario_path("default"), catalog)
    model = catalog.model_for(s)
    sized, bits, demands, _, usable = milp_inputs(
        s, model, catalog.gpus, "pdd", default_policy(s), 0.8, (4, 6, 10)
    )
    form = formulate(
        sized, usable, demands, catalog.lines, bits, demand_rps=s.workload.arrival_rate_per_s
    )
    for v in form.problem.variables():
        v.cat = pulp.LpContinuous
    form.problem.solve(pulp.HiGHS(msg=False))
    assert pulp.LpStatus[form.problem.status] == "Optimal"
    return form, usable, demands, sized.policy.mixed_pools


def test_each_roles_chosen_weights_sum_to_one_in_the_relaxation(relaxed):
    form, usable, demands, mixed = relaxed
    one_type = [r for r in demands if not (mixed and r in MIXABLE_ROLES)]  # a mixed role adds
    assert "prefill" in one_type  # its types up instead
    for role in one_type:
        chosen = sum(form.chosen[c.key].value() or 0.0 for c in usable if c.role == role)
        assert chosen == pytest.approx(1.0, abs=1e-6), role
