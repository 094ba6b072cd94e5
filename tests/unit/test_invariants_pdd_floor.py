"""Invariant: an infeasible answer names the limit that cannot be met, in figures (helper
ha's bug hunt; docs/guarantees.md: exit 3 is "always a proof (the limit that cannot be met, by how
much)").

CDC-PD and IDC-PD name a TPOT limit that no decode instance meets even at batch 1, with
the figure to relax it to (plan/floors.py). PDD did not: its relay and main-decode
candidates stay in the search, the walk proves no plan meets the SLA, and the answer said
only "no usable candidate for relay_decode". Llama-3.1-70B, 1,000-token prompts at 10 %
hits (every request relayed): one decode step at batch 1 on the fastest H100 instance
takes 10.53 ms (test_invariants_relaxations.py: the same step as IDC-PD's), above a 10 ms
TPOT limit; H200 main decode is faster, so the relay is the role that cannot."""

from __future__ import annotations

import pytest
import yaml

from pdd_plan import api
from pdd_plan.errors import InfeasibleError
from pdd_plan.loaders.catalog import Catalog

pytestmark = pytest.mark.slow  # every test here is slow (pyproject.toml: markers)


def test_a_relay_that_misses_the_tpot_limit_at_batch_1_is_named_in_figures(tmp_path):
    data = {
        "name": "relay",
        "model": "llama_3_1_70b",
        "datacenters": [
            {"id": "dc_a", "roles": ["prefill", "relay_decode"],
             "gpus": [{"gpu": "h100_sxm", "max_gpus": 16}]},
            {"id": "dc_b", "roles": ["main_decode"], "gpus": [{"gpu": "h200_sxm", "max_gpus": 16}]},
        ],
        "wan": {"rtt_ms": 10, "tiers": ["wave_10g"], "per_connection_gbit_per_s": 1.0,
                "connection_pool_size": 64, "max_lines": 4},
        "workload": {
            "arrival_rate_per_s": 2.0,
            "input_tokens": {"kind": "fixed", "value": 1000},
            "output_tokens": {"kind": "fixed", "value": 100},
            "prefix_hit_rate": {"kind": "fixed", "value": 0.1},
        },
        "sla": {"ttft_p90_s": 60, "tpot_p90_ms": 10},
        "objective": {"kind": "min_cost"},
        "policy": {"rld_hit_threshold": 0.9, "handoff": "catch_up"},  # one policy: quick
        "architectures": ["pdd"],
    }  # fmt: skip
    path = tmp_path / "relay.yaml"
    path.write_text(yaml.safe_dump(data))
    catalog = Catalog()
    try:
        result, files = api.solve_scenario(str(path), architecture="pdd", catalog=catalog)
    except InfeasibleError as refused:
        found, text = refused.shortfalls, str(refused)
    else:
        assert result["status"] == "infeasible"
        answer = api.infeasible_answer(str(path), "pdd", result, files, catalog)
        found, text = answer.get("shortfalls", []), answer["reason"]
    tpot = [s for s in found if s["limit"].startswith("TPOT P90 limit (relay_decode")]
    assert tpot, text
    assert tpot[0]["needs"] > 10.0 and tpot[0]["has"] == 10.0
    assert "sla.tpot_p90_ms at least" in tpot[0]["relaxation"]
