"""`pdd-plan simulate`: load a scenario and a plan, simulate, return the §7 JSON."""

from __future__ import annotations

import math
from pathlib import Path

from pdd_plan.errors import InputError, naming_file
from pdd_plan.loaders.catalog import Catalog
from pdd_plan.loaders.engine_profile import profile_summary
from pdd_plan.loaders.plan_file import load_plan
from pdd_plan.loaders.scenario import load_scenario, resolve_scenario_path
from pdd_plan.model.decode.mixed_pool import refuse_mixed
from pdd_plan.model.evaluate import prepare
from pdd_plan.model.setup import Setup, check_holds_a_request
from pdd_plan.sim import stats
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
    least = least_requests(warmup_frac)
    if requests < least:
        raise InputError.single(
            "command line", "--requests", f"{requests:,}",
            f"at least {least:,} with --warmup-frac {warmup_frac:g}",
            f"{stats.MIN_MEASURED_REQUESTS:,} measured after the warm-up: {stats.BATCHES} "
            f"batches of {stats.PER_BATCH_MIN} for the confidence interval of a P99",
        )  # fmt: skip


def measured_requests(requests: int, warmup_frac: float) -> int:
    """Requests left after the warm-up (as `measure.measure` counts them)."""
    return requests - min(int(warmup_frac * requests), requests - 1)


def least_requests(warmup_frac: float) -> int:
    """The fewest `--requests` that leave `stats.MIN_MEASURED_REQUESTS` after the warm-up."""
    n = math.ceil(stats.MIN_MEASURED_REQUESTS / (1.0 - warmup_frac))
    while n > 1 and measured_requests(n - 1, warmup_frac) >= stats.MIN_MEASURED_REQUESTS:
        n -= 1
    while measured_requests(n, warmup_frac) < stats.MIN_MEASURED_REQUESTS:
        n += 1
    return n


def load_setup(scenario: str | Path | None, plan: str | Path, catalog: Catalog) -> Setup:
    s = load_scenario(resolve_scenario_path(str(scenario) if scenario else None), catalog)
    deployment = load_plan(plan, s, catalog)
    setup = prepare(s, deployment, catalog.model_for(s), catalog.gpus, catalog.lines)
    check_holds_a_request(setup)  # the check evaluate makes, with the same message
    refuse_mixed(setup, "simulate")  # the simulator's decode pools are per role
    return setup


def simulate_plan(
    scenario: str | Path | None,
    plan: str | Path,
    requests: int,
    seed: int = 0,
    warmup_frac: float = 0.1,
    catalog: Catalog | None = None,
    progress=None,
) -> tuple[dict, SimRun]:
    """The metrics JSON of a simulated run (design.md §7 keys plus the simulator's own),
    and the run; the caller adds the plan object (report/ formats it)."""
    check_options(requests, warmup_frac, seed)
    with naming_file("plan", str(plan)):  # the model's refusals of a plan name its file
        setup = load_setup(scenario, plan, catalog or Catalog())
        run = simulate(setup, SimConfig(requests, seed, warmup_frac), progress)
    out = metrics_json(run, measure(run))
    gpus = [g.gpu for g in setup.deployment.instances]  # a profile set: each GPU's member
    out["engine_profile"] = profile_summary(setup.scenario.engine.profile, gpus)
    return out, run
