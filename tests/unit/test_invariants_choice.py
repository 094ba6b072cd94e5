"""Invariants of `solve` choosing the architecture (helper ha's bug hunt).

An answer says `optimal` only when no plan the scenario allows could beat it. Choosing
the architecture compares every architecture's own search; when one of those stopped
before its proof (its time limit, or the command's shared deadline, reached first), the
plans it never walked may beat the winner, so the choice is proven only where that
search's own bound rules them out. Otherwise the answer is a plan found, not proven
optimal: `feasible`, with `solver.stopped` saying what stopped (docs/guarantees.md, exit
codes: "a plan found before such a stop is `feasible`, not proven optimal")."""

from __future__ import annotations

import time

import yaml
from llama_two_dc import two_dc_llama

from pdd_plan import api
from pdd_plan.loaders.catalog import Catalog
from pdd_plan.loaders.scenario import load_scenario
from pdd_plan.stages.solving import solve_service


def two_architectures(tmp_path) -> object:
    """CDC-PD or IDC-PD of Llama-3.1-70B at 2 req/s, fixed lengths: solved in a moment."""
    data = two_dc_llama(wan__connection_pool_size=64,
                        workload__input_tokens={"kind": "fixed", "value": 4000})  # fmt: skip
    data["name"], data["architectures"] = "two", ["cdc_pd", "idc_pd"]
    path = tmp_path / "two.yaml"
    path.write_text(yaml.safe_dump(data))
    catalog = Catalog()
    return load_scenario(path, catalog), catalog


def starve(monkeypatch, arch: str) -> None:
    """`arch`'s search gets a deadline already past (as the last architecture solved in
    one process gets when the others took the shared time limit): it stops while bounding
    its candidates, nothing walked, nothing proven."""
    real = api.solve_loaded

    def solve_loaded(s, architecture, catalog, resolution, time_limit_s, deadline=None):
        if architecture == arch:
            deadline = time.perf_counter() - 1.0
        return real(s, architecture, catalog, resolution, time_limit_s, deadline)

    monkeypatch.setattr(solve_service, "solve_loaded", solve_loaded)  # where solve_choosing looks


def test_both_searches_proven_give_an_optimal_choice(tmp_path):
    s, catalog = two_architectures(tmp_path)
    out, _ = api.solve_choosing(s, catalog, time_limit_s=30, jobs=1)
    statuses = {c["architecture"]: c["status"] for c in out["architecture_choice"]["candidates"]}
    assert statuses == {"cdc_pd": "optimal", "idc_pd": "optimal"}
    assert out["status"] == "optimal" and "stopped" not in out["solver"]


def test_a_competitor_searched_to_no_proof_leaves_the_choice_unproven(tmp_path, monkeypatch):
    """IDC-PD's search stopped before walking any plan: its plans may be cheaper than the
    CDC-PD winner, so `optimal` would be a claim nothing proved."""
    s, catalog = two_architectures(tmp_path)
    starve(monkeypatch, "idc_pd")
    out, _ = api.solve_choosing(s, catalog, time_limit_s=30, jobs=1)
    statuses = {c["architecture"]: c["status"] for c in out["architecture_choice"]["candidates"]}
    assert statuses == {"cdc_pd": "optimal", "idc_pd": "unproven"}
    assert out["plan"]["architecture"] == "cdc_pd"
    assert out["status"] == "feasible"
    stop = out["solver"]["stopped"]
    assert stop["proven"] is False and "idc_pd" in stop["stopped_by"]
