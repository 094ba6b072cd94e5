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

import numpy as np

from pdd_plan.errors import SaturatedError
from pdd_plan.loaders.catalog import Catalog
from pdd_plan.loaders.plan_file import load_plan
from pdd_plan.loaders.scenario import load_scenario, resolve_scenario_path
from pdd_plan.model import evaluate as ev
from pdd_plan.model.compute.attention import KvLayout
from pdd_plan.model.decode.decode_admission import support_max
from pdd_plan.model.deployment import Deployment
from pdd_plan.model.scenario import Scenario, ShortOutputCutoff
from pdd_plan.model.setup import Setup
from pdd_plan.model.workload.workload import Bins
from pdd_plan.sim import stats
from pdd_plan.sim.gaps import measured_gaps_s, overflow_frac
from pdd_plan.sim.measure import Measured, measure
from pdd_plan.sim.run import SimConfig, simulate
from pdd_plan.sim.stats import Estimate

METRICS = ("ttft_p50", "ttft_p90", "ttft_p99", "tpot_p50", "tpot_p90", "tpot_p99", "gap_p90")
TOLERANCE = {**{k: 0.15 for k in METRICS}, "goodput": 0.05}
# a goodput trial lasts this many times the longest a request holds a decode slot, so
# that decode fills before the run ends (a short run never sees decode saturate)
TRIAL_HOLDS = 5
MAX_TRIAL_REQUESTS = 400_000
STABLE_BUSY_FRAC = 0.98
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
    # the decode engine keeps every token uncompressed (2.38 GB a 64K request on
    # `pdd-paper`, against 0.30 GB at the model's own layout): decode binds IDC-PD and the
    # narrow mix's relay fills, the regimes these cases exist to check (issue #23)
    kv_all: bool = False


SUITE = (
    Case("paper pdd 0.3", "pdd-paper", "scenarios/plans/pdd-paper-pdd.yaml", 0.3),
    Case("paper pdd 0.6", "pdd-paper", "scenarios/plans/pdd-paper-pdd.yaml", 0.6),
    Case("paper pdd 0.9", "pdd-paper", "scenarios/plans/pdd-paper-pdd.yaml", 0.9),
    Case("paper pdd one-shot 0.6", "pdd-paper", "scenarios/plans/pdd-paper-pdd.yaml", 0.6,
         handoff="one_shot"),
    Case("paper pdd narrow kv-all 0.6", "pdd-paper", "scenarios/plans/pdd-paper-pdd.yaml",
         0.6, narrow=True, kv_all=True),
    Case("paper pdd cut-off 0.6", "pdd-paper", "scenarios/plans/pdd-paper-pdd.yaml", 0.6,
         cutoff=True),
    Case("paper pdd 1 line 0.6", "pdd-paper", "scenarios/plans/pdd-paper-pdd.yaml", 0.6,
         lines=1),
    Case("paper pdd bursty cv2=4 0.6", "pdd-paper", "scenarios/plans/pdd-paper-pdd.yaml", 0.6,
         cv2=4.0),
    Case("paper pdd 3 P 0.7", "pdd-paper", "benchmarks/agreement/paper-pdd-3p.yaml", 0.7),
    Case("paper pdd 3 P 0.9", "pdd-paper", "benchmarks/agreement/paper-pdd-3p.yaml", 0.9),
    Case("paper cdc_pd 0.6", "pdd-paper", "scenarios/plans/pdd-paper-cdc_pd.yaml", 0.6),
    Case("paper idc_pd kv-all 0.6", "pdd-paper", "scenarios/plans/pdd-paper-idc_pd.yaml", 0.6,
         kv_all=True),
    Case("paper colocated 0.5", "pdd-paper", "benchmarks/agreement/paper-colocated.yaml", 0.5),
    Case("default pdd 0.5", "default", "benchmarks/agreement/default-pdd.yaml", 0.5),
    Case("default pdd one-shot 0.8", "default", "benchmarks/agreement/default-pdd.yaml", 0.8,
         handoff="one_shot"),
    # decode near its capacity: HBM-bound decode (the engine layout's 46 KB per token)
    Case("paper idc_pd kv-all 0.9", "pdd-paper", "scenarios/plans/pdd-paper-idc_pd.yaml", 0.9,
         kv_all=True),
    Case("paper idc_pd kv-all 0.95", "pdd-paper", "scenarios/plans/pdd-paper-idc_pd.yaml", 0.95,
         kv_all=True),
    Case("paper idc_pd kv-all 0.99", "pdd-paper", "scenarios/plans/pdd-paper-idc_pd.yaml", 0.99,
         kv_all=True),
    # the narrow mix relays every request: RLD fills and overflows to P -> MD
    Case("paper pdd narrow overflow kv-all 0.9", "pdd-paper",
         "scenarios/plans/pdd-paper-pdd.yaml", 0.9, narrow=True, kv_all=True),
    Case("paper colocated 0.9", "pdd-paper", "benchmarks/agreement/paper-colocated.yaml", 0.9),
    # variable context lengths (lognormal prompts 512-131,072 tokens) near capacity
    Case("default pdd 0.9", "default", "benchmarks/agreement/default-pdd.yaml", 0.9),
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
    engine = s.engine
    if case.kv_all:
        engine = dataclasses.replace(engine, kv_layout=KvLayout(None, "agreement: decode-bound"))
    return (
        dataclasses.replace(s, workload=w, policy=policy, engine=engine),
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


def _simulated(setup: Setup, requests: int, seed: int) -> tuple[dict[str, Estimate], Measured]:
    run = simulate(setup, SimConfig(requests, seed, 0.1))
    m = measure(run)
    qs = ("p50", "p90", "p99")
    simulated = {f"ttft_{q}": m.ttft_s[q] for q in qs} | {f"tpot_{q}": m.tpot_s[q] for q in qs}
    simulated["gap_p90"] = stats.percentile(measured_gaps_s(run), 0.90)
    over = overflow_frac(run)
    simulated["overflow"] = stats.Estimate(over, over, over)
    return simulated, m


def envelope(estimates: list[Estimate]) -> Estimate:
    """Independent runs (seeds) of one case as one estimate: the median of their values
    and the union of their intervals. Near saturation a tail percentile is set by a few
    long queue episodes, so one run's batch-means interval (batches are not independent
    there) is narrower than the spread between seeds."""
    values = sorted(e.value for e in estimates)
    return Estimate(float(np.median(values)), min(e.low for e in estimates),
                    max(e.high for e in estimates))  # fmt: skip


def compare(case: Case, repo: Path, requests: int, seed: int = 1, catalog=None,
            seeds: int = 1) -> Row:  # fmt: skip
    """The closed form against `seeds` simulated runs (seeds `seed`, `seed` + 1, ...; with
    several, each metric is their `envelope`; `measured` is the first run's)."""
    catalog = catalog or Catalog()
    setup = case_setup(case, repo, catalog)
    rate = setup.scenario.workload.arrival_rate_per_s
    snap = ev.snapshot(setup, rate)
    qs = ("p50", "p90", "p99")
    closed = {f"ttft_{q}": snap.ttft_s[q] for q in qs} | {f"tpot_{q}": snap.tpot_s[q] for q in qs}
    closed["gap_p90"] = snap.largest_gap_s["p90"]
    closed["overflow"] = snap.relay_overflow_frac
    runs = [_simulated(setup, requests, seed + i) for i in range(max(seeds, 1))]
    simulated = {k: envelope([r[0][k] for r in runs]) for k in runs[0][0]}
    return Row(case, rate, closed, simulated, runs[0][1])


def verdict(closed: float, sim: Estimate, tol: float) -> str:
    """ "yes" within the tolerance, "no" outside the widened interval, else "n/a"."""
    if not (math.isfinite(closed) and math.isfinite(sim.value)) or sim.value == 0:
        return "n/a"
    if abs(closed / sim.value - 1) <= tol:
        return "yes"
    if closed < sim.low * (1 - tol) or closed > sim.high * (1 + tol):
        return "no"
    return "n/a"


def longest_hold_s(setup: Setup) -> float:
    """The longest a request holds a decode slot: the workload's largest output at the
    step of a full batch (the TPOT-feasible one)."""
    pool = setup.decode
    context = float(setup.classes.mean(setup.classes.input_tokens))
    full = max(pool.batch_limit or pool.instance.max_batch(context), 1)
    step = float(pool.instance.decode_step_s(full, context))
    return support_max(setup.scenario.workload.output_tokens) * step


def trial_requests(setup: Setup, rate: float, requests: int, warmup_frac: float = 0.1) -> int:
    """At least `requests`, and enough that the measured part lasts TRIAL_HOLDS x the
    longest slot hold (capped at MAX_TRIAL_REQUESTS)."""
    needed = math.ceil(rate * TRIAL_HOLDS * longest_hold_s(setup) / (1 - warmup_frac))
    return int(min(max(requests, needed), MAX_TRIAL_REQUESTS))


def decode_busy_frac(run, window: tuple[float, float]) -> dict[str, float]:
    """Per decode role: the time-average batch over the window, over the largest batch the
    run ever reached there (the slots it fills when saturated)."""
    out = {}
    for role, segments in run.segments.items():
        busy, top = 0.0, 1.0
        for _, t0, _, _, batch in segments:
            if not len(t0):
                continue
            ends = np.append(t0[1:], max(t0[-1], window[1]))
            span = np.clip(np.minimum(ends, window[1]) - np.maximum(t0, window[0]), 0, None)
            busy += float((batch * span).sum())
            top = max(top, float(batch.max()))
        out[role] = busy / (len(segments) * top * (window[1] - window[0]))
    return out


def meets_sla(setup: Setup, rate: float, requests: int, seed: int) -> bool:
    """A simulated run at `rate` meets every SLA percentile and no resource is saturated
    (measured: prefill busy, line load, pool occupancy and every decode role's occupancy
    of its slots under 98 %; a finite run over capacity still has finite percentiles, so
    the SLA alone cannot tell). The run lasts `trial_requests`."""
    from pdd_plan.sim.measure import sla_checks  # noqa: PLC0415

    n = trial_requests(setup, rate, requests)
    run = simulate(setup, SimConfig(n, seed, 0.1, rate_per_s=rate))
    m = measure(run)
    util = m.utilization_frac
    stable = all(util.get(k, 0.0) < STABLE_BUSY_FRAC for k in
                 ("prefill", "colocated", "wan_line", "wan_pool"))  # fmt: skip
    decode = decode_busy_frac(run, m.window_s)
    decode.pop("relay_decode", None)  # RLD overflows to P -> MD: full is not unstable
    stable = stable and all(u < STABLE_BUSY_FRAC for u in decode.values())
    return stable and all(c["value"] <= c["limit"] for c in sla_checks(run, m).values())


def simulated_goodput_rps(
    setup: Setup, guess_rps: float, requests: int, seed: int = 1, steps: int = 6
) -> float:
    """Bisection for the largest rate that `meets_sla`, bracketed around `guess_rps`;
    each trial runs at least `requests` requests and TRIAL_HOLDS longest slot holds.
    The largest rate met: the low end of `simulated_goodput_bracket`."""
    return simulated_goodput_bracket(setup, guess_rps, requests, seed, steps)[0]


def simulated_goodput_bracket(
    setup: Setup, guess_rps: float, requests: int, seed: int = 1, steps: int = 6
) -> tuple[float, float]:
    """(a rate met, a rate missed, or the low end's double when none was missed), `steps`
    halvings of [0.6, 1.4] x `guess_rps` apart: the goodput lies between them."""
    low, high = 0.6 * guess_rps, 1.4 * guess_rps
    if not meets_sla(setup, low, requests, seed):
        if low < 1e-6:
            return low, 2 * low
        return simulated_goodput_bracket(setup, low, requests, seed, steps)
    for _ in range(steps):
        mid = (low + high) / 2
        low, high = (mid, high) if meets_sla(setup, mid, requests, seed) else (low, mid)
    return low, high
