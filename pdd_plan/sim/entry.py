"""`pdd-plan simulate`: load a scenario and a plan, simulate, return the §7 JSON."""

from __future__ import annotations

import math
from pathlib import Path

from pdd_plan.errors import InputError
from pdd_plan.loaders.catalog import Catalog
from pdd_plan.loaders.plan_file import load_plan
from pdd_plan.loaders.scenario import load_scenario, resolve_scenario_path
from pdd_plan.model.evaluate import prepare
from pdd_plan.model.setup import Setup
from pdd_plan.sim.measure import measure
from pdd_plan.sim.result import metrics_json
from pdd_plan.sim.run import SimConfig, SimRun, simulate

MAX_REQUESTS = 10_000_000


def check_options(requests: int, warmup_frac: float, seed: int) -> None:
    """Command-line values the simulator cannot run with: InputError (exit 2)."""
    if not 1 <= requests <= MAX_REQUESTS:
        raise InputError.single(
            "command line", "--requests", str(requests), f"an integer from 1 to {MAX_REQUESTS:,}"
        )
    if not (math.isfinite(warmup_frac) and 0.0 <= warmup_frac < 1.0):
        raise InputError.single(
            "command line", "--warmup-frac", str(warmup_frac), "a fraction in [0, 1)"
        )
    if not 0 <= seed < 2**63:
        raise InputError.single("command line", "--seed", str(seed), "an integer from 0 to 2^63-1")


def load_setup(scenario: str | Path | None, plan: str | Path, catalog: Catalog) -> Setup:
    s = load_scenario(resolve_scenario_path(str(scenario) if scenario else None), catalog)
    deployment = load_plan(plan, s, catalog)
    return prepare(s, deployment, catalog.model_for(s), catalog.gpus, catalog.lines)


def simulate_plan(
    scenario: str | Path | None,
    plan: str | Path,
    requests: int,
    seed: int = 0,
    warmup_frac: float = 0.1,
    catalog: Catalog | None = None,
) -> tuple[dict, SimRun]:
    """The metrics JSON of a simulated run (design.md §7 keys plus the simulator's own),
    and the run; the caller adds the plan object (report/ formats it)."""
    check_options(requests, warmup_frac, seed)
    setup = load_setup(scenario, plan, catalog or Catalog())
    run = simulate(setup, SimConfig(requests, seed, warmup_frac))
    return metrics_json(run, measure(run)), run
