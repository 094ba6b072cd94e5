"""One price for a GPU hour (issue #24 item 5): the optimiser's candidates (the MILP's
costs), its search space and the bill all charge rental plus, when `costs.include_power`,
TDP x PUE x the electricity price. The MILP's candidates once left the power out."""

import dataclasses

import pytest

from pdd_plan.loaders.scenario import load_scenario, resolve_scenario_path
from pdd_plan.plan.candidates import default_policy
from pdd_plan.plan.elastic import milp_inputs

USD_PER_KWH = 0.25


@pytest.fixture(scope="module")
def powered(catalog):
    s = load_scenario(resolve_scenario_path("default"), catalog)
    costs = dataclasses.replace(s.costs, include_power=True, power_usd_per_kwh=USD_PER_KWH)
    return dataclasses.replace(s, costs=costs)


def test_a_candidates_price_carries_its_power_by_hand(catalog, powered):
    model = catalog.model_for(powered)
    policy = default_policy(powered)
    *_, found, _usable = milp_inputs(powered, model, catalog.gpus, "pdd", policy, 0.8, (4, 6, 10))
    assert found
    for c in found:
        gpu = catalog.gpus[c.gpu]
        offer = next(o for d in powered.datacenters if d.id == c.datacenter for o in d.gpus
                     if o.gpu == c.gpu)  # fmt: skip
        by_hand = c.gpus_per_instance * (
            offer.price_usd_per_gpu_hour + gpu.tdp_w * powered.costs.pue / 1e3 * USD_PER_KWH
        )
        assert c.price_usd_per_hour == pytest.approx(by_hand, rel=1e-12)
