"""Invariant: for `max_goodput`, the search's answer does not depend on its seeds (helper
ha's bug hunt).

plan/search.py: "Seeds (the MILP's verified plans) only set the first limit; the result
never depends on them". max_goodput values a plan's goodput up to GOODPUT_HEADROOM x the
offered rate; plans at that cap are equal in value, and the cheaper one wins (choose.py's
tie rule; the walk goes in increasing cost, so without seeds it meets the cheapest first).
Found by fuzzing: a MILP seed that reached the cap ended the walk at once (Goal.limit was
-inf), so a plan three times dearer than one of equal value was the answer, and raising the
budget made the answer cheaper (budget $1,000: $847.71/h; $1,500: $288.27/h, both at the
capped goodput)."""

from __future__ import annotations

import pytest
import yaml

from pdd_plan.loaders.catalog import Catalog
from pdd_plan.loaders.scenario import load_scenario
from pdd_plan.model.deployment import Deployment, InstanceGroup
from pdd_plan.model.evaluate import deployment_cost_usd_per_hour
from pdd_plan.plan import solve as sv
from pdd_plan.plan.goal import GOODPUT_HEADROOM
from pdd_plan.plan.search import Search

pytestmark = pytest.mark.slow  # every test here is slow (pyproject.toml: markers)

RESOLUTION = (4, 4, 4)


def scenario(tmp_path):
    """IDC-PD of Llama-3.1-70B at 1 req/s with a roomy budget: the capped goodput (10 req/s)
    is within reach of a few instances."""
    data = {
        "name": "gp",
        "model": "llama_3_1_70b",
        "datacenters": [
            {"id": "dc_a", "roles": ["prefill", "decode"],
             "gpus": [{"gpu": "h100_sxm", "max_gpus": 64, "gpus_per_instance": [2, 4]}]},
        ],
        "workload": {
            "arrival_rate_per_s": 1.0,
            "input_tokens": {"kind": "fixed", "value": 4000},
            "output_tokens": {"kind": "fixed", "value": 100},
            "prefix_hit_rate": {"kind": "fixed", "value": 0.0},
        },
        "sla": {"ttft_p90_s": 60, "tpot_p90_ms": 100},
        "objective": {"kind": "max_goodput", "budget_usd_per_hour": 1000},
        "architectures": ["idc_pd"],
    }  # fmt: skip
    path = tmp_path / "gp.yaml"
    path.write_text(yaml.safe_dump(data))
    catalog = Catalog()
    return load_scenario(path, catalog), catalog


def walk(s, catalog, seed: Deployment | None):
    search = Search(s, catalog.model_for(s), catalog.gpus, catalog.lines, "idc_pd",
                    sv._policies(s, "idc_pd"), RESOLUTION)  # fmt: skip
    if seed is not None:
        search.consider_seed(seed)
    return search.run()


def test_a_dear_seed_at_the_goodput_cap_does_not_stop_the_walk(tmp_path):
    s, catalog = scenario(tmp_path)
    cap_rps = GOODPUT_HEADROOM * s.workload.arrival_rate_per_s
    plain = walk(s, catalog, None)
    assert plain.proven and plain.value == pytest.approx(cap_rps)
    policy = plain.deployment.policy
    # the dearest plan the availability allows: 8 prefill and 8 decode instances of 4 GPUs
    dear = Deployment("idc_pd", (InstanceGroup("prefill", "dc_a", "h100_sxm", 4, 8),
                                 InstanceGroup("decode", "dc_a", "h100_sxm", 4, 8)),
                      (), policy)  # fmt: skip
    dear_cost = deployment_cost_usd_per_hour(s, dear, catalog.gpus, catalog.lines)
    assert dear_cost > 2 * plain.cost_usd_per_hour  # a seed worth replacing
    seeded = walk(s, catalog, dear)
    assert seeded.proven and seeded.value == pytest.approx(cap_rps)
    assert seeded.cost_usd_per_hour == pytest.approx(plain.cost_usd_per_hour)
