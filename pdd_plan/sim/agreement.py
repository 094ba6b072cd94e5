"""The agreement suite: scenarios on which the closed forms (`evaluate`) are held to the
simulator, and the verdict per metric.

Cases are the paper's scenario and the default one with overrides (load as a share of the
closed form's capacity, hit-rate mix, line size, handoff mode, short-output cut-off,
burstiness, prefill-bound and the baselines). A metric agrees when the closed form is
within the tolerance of the simulated value; it disagrees when it lies outside the
simulator's 95 % interval widened by the tolerance; otherwise the interval is too wide to
judge at this run length.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from pathlib import Path

from pdd_plan.errors import SaturatedError
from pdd_plan.loaders.catalog import Catalog
from pdd_plan.loaders.plan_file import load_plan
from pdd_plan.loaders.scenario import load_scenario, resolve_scenario_path
from pdd_plan.model import evaluate as ev
from pdd_plan.model.deployment import Deployment
from pdd_plan.model.scenario import Scenario, ShortOutputCutoff
from pdd_plan.model.setup import Setup
from pdd_plan.model.workload import Bins
from pdd_plan.sim.measure import Measured, measure
from pdd_plan.sim.run import SimConfig, simulate
from pdd_plan.sim.stats import Estimate

TOLERANCE = {"ttft_p50": 0.15, "ttft_p90": 0.15, "ttft_p99": 0.15, "tpot_p90": 0.15,
             "goodput": 0.10}  # fmt: skip
NARROW = Bins((0.85,), (0.95,), (1.0,))


@dataclass(frozen=True)
class Case:
    name: str
    scenario: str  # shipped name
    plan: str  # path relative to the repository
    load_frac: float  # of the closed form's capacity
    handoff: str | None = None
    cutoff: bool = False
    narrow: bool = False
    lines: int | None = None
    cv2: float | None = None


SUITE = (
    Case("paper pdd 0.3", "pdd-paper", "scenarios/plans/pdd-paper-pdd.yaml", 0.3),
    Case("paper pdd 0.6", "pdd-paper", "scenarios/plans/pdd-paper-pdd.yaml", 0.6),
    Case("paper pdd 0.9", "pdd-paper", "scenarios/plans/pdd-paper-pdd.yaml", 0.9),
    Case("paper pdd one-shot 0.6", "pdd-paper", "scenarios/plans/pdd-paper-pdd.yaml", 0.6,
         handoff="one_shot"),
    Case("paper pdd narrow 0.6", "pdd-paper", "scenarios/plans/pdd-paper-pdd.yaml", 0.6,
         narrow=True),
    Case("paper pdd cut-off 0.6", "pdd-paper", "scenarios/plans/pdd-paper-pdd.yaml", 0.6,
         cutoff=True),
    Case("paper pdd 1 line 0.6", "pdd-paper", "scenarios/plans/pdd-paper-pdd.yaml", 0.6,
         lines=1),
    Case("paper pdd bursty cv2=4 0.6", "pdd-paper", "scenarios/plans/pdd-paper-pdd.yaml", 0.6,
         cv2=4.0),
    Case("paper pdd 3 P 0.7", "pdd-paper", "benchmarks/agreement/paper-pdd-3p.yaml", 0.7),
    Case("paper pdd 3 P 0.9", "pdd-paper", "benchmarks/agreement/paper-pdd-3p.yaml", 0.9),
    Case("paper cdc_pd 0.6", "pdd-paper", "scenarios/plans/pdd-paper-cdc_pd.yaml", 0.6),
    Case("paper idc_pd 0.6", "pdd-paper", "scenarios/plans/pdd-paper-idc_pd.yaml", 0.6),
    Case("paper colocated 0.5", "pdd-paper", "benchmarks/agreement/paper-colocated.yaml", 0.5),
    Case("default pdd 0.5", "default", "benchmarks/agreement/default-pdd.yaml", 0.5),
    Case("default pdd one-shot 0.8", "default", "benchmarks/agreement/default-pdd.yaml", 0.8,
         handoff="one_shot"),
)  # fmt: skip


def _override(s: Scenario, d: Deployment, case: Case) -> tuple[Scenario, Deployment]:
    w = s.workload
    if case.narrow:
        w = dataclasses.replace(w, prefix_hit_rate=NARROW)
    if case.cv2 is not None:
        w = dataclasses.replace(w, burstiness_cv2=case.cv2)
    policy = s.policy
    if case.cutoff:
        policy = dataclasses.replace(policy, short_output_cutoff=ShortOutputCutoff(True))
    routing = d.policy
    if case.handoff or case.cutoff:
        routing = dataclasses.replace(
            routing, handoff=case.handoff or routing.handoff, short_output_cutoff=case.cutoff
        )
    lines = d.lines
    if case.lines is not None:
        lines = tuple(dataclasses.replace(line, count=case.lines) for line in d.lines)
    return (
        dataclasses.replace(s, workload=w, policy=policy),
        dataclasses.replace(d, policy=routing, lines=lines),
    )


def capacity_rps(setup: Setup) -> float:
    """The closed form's saturation rate (bisection on SaturatedError)."""
    low, high = 0.0, max(setup.scenario.workload.arrival_rate_per_s, 1.0)

    def ok(rate: float) -> bool:
        try:
            ev.snapshot(setup, rate)
            return True
        except SaturatedError:
            return False

    while ok(high):
        low, high = high, 2 * high
    while high - low > 1e-3 * high:
        mid = (low + high) / 2
        low, high = (mid, high) if ok(mid) else (low, mid)
    return low


def case_setup(case: Case, repo: Path, catalog: Catalog) -> Setup:
    """The case's Setup at its arrival rate (load_frac x the closed form's capacity)."""
    s = load_scenario(resolve_scenario_path(case.scenario), catalog)
    d = load_plan(repo / case.plan, s, catalog)
    s, d = _override(s, d, case)
    model = catalog.model_for(s)
    setup = ev.prepare(s, d, model, catalog.gpus, catalog.lines)
    rate = case.load_frac * capacity_rps(setup)
    s = dataclasses.replace(s, workload=dataclasses.replace(s.workload, arrival_rate_per_s=rate))
    return ev.prepare(s, d, model, catalog.gpus, catalog.lines)


@dataclass(frozen=True)
class Row:
    case: Case
    rate_rps: float
    closed: dict[str, float]
    simulated: dict[str, Estimate]
    measured: Measured


def compare(case: Case, repo: Path, requests: int, seed: int = 1, catalog=None) -> Row:
    catalog = catalog or Catalog()
    setup = case_setup(case, repo, catalog)
    rate = setup.scenario.workload.arrival_rate_per_s
    snap = ev.snapshot(setup, rate)
    m = measure(simulate(setup, SimConfig(requests, seed, 0.1)))
    closed = {f"ttft_{q}": snap.ttft_s[q] for q in ("p50", "p90", "p99")}
    closed["tpot_p90"] = snap.tpot_s["p90"]
    simulated = {f"ttft_{q}": m.ttft_s[q] for q in ("p50", "p90", "p99")}
    simulated["tpot_p90"] = m.tpot_s["p90"]
    return Row(case, rate, closed, simulated, m)


def verdict(closed: float, sim: Estimate, tol: float) -> str:
    """ "yes" within the tolerance, "no" outside the widened interval, else "n/a"."""
    if not (math.isfinite(closed) and math.isfinite(sim.value)) or sim.value == 0:
        return "n/a"
    if abs(closed / sim.value - 1) <= tol:
        return "yes"
    if closed < sim.low * (1 - tol) or closed > sim.high * (1 + tol):
        return "no"
    return "n/a"


def meets_sla(setup: Setup, rate: float, requests: int, seed: int) -> bool:
    """A simulated run at `rate` meets every SLA percentile and no resource is saturated
    (measured: prefill busy, line load and pool occupancy under 98 %; a finite run over
    capacity still has finite percentiles, so the SLA alone cannot tell)."""
    from pdd_plan.sim.measure import sla_checks  # noqa: PLC0415

    run = simulate(setup, SimConfig(requests, seed, 0.1, rate_per_s=rate))
    m = measure(run)
    util = m.utilization_frac
    stable = all(util.get(k, 0.0) < 0.98 for k in ("prefill", "colocated", "wan_line", "wan_pool"))
    return stable and all(c["value"] <= c["limit"] for c in sla_checks(run, m).values())


def simulated_goodput_rps(
    setup: Setup, guess_rps: float, requests: int, seed: int = 1, steps: int = 6
) -> float:
    """Bisection for the largest rate that `meets_sla`, bracketed around `guess_rps`."""
    low, high = 0.6 * guess_rps, 1.4 * guess_rps
    if not meets_sla(setup, low, requests, seed):
        return low if low < 1e-6 else simulated_goodput_rps(setup, low, requests, seed, steps)
    for _ in range(steps):
        mid = (low + high) / 2
        low, high = (mid, high) if meets_sla(setup, mid, requests, seed) else (low, mid)
    return low
