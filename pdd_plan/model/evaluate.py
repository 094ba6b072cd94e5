"""Scenario + Deployment -> Metrics: latency percentiles, goodput, cost, BCR.

`prepare` does everything that does not depend on the arrival rate (request classes,
routes, roofline instances, prices); `snapshot` evaluates one arrival rate (vectorised over
request classes); `goodput_rps` bisects on the arrival rate for the largest one that
meets the SLA; `evaluate` puts it together.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pdd_plan.errors import SaturatedError
from pdd_plan.model import routing as rt
from pdd_plan.model.decode_pool import DecodeLoad, decode_fixed_point
from pdd_plan.model.latency_mixture import LatencyGroup, grouped_quantiles_s
from pdd_plan.model.metrics import Metrics
from pdd_plan.model.network import rdma_transfer_s, wan_transfer
from pdd_plan.model.queueing import WaitModel, ggc_wait
from pdd_plan.model.setup import (  # noqa: F401  (re-exported: the evaluate API)
    DECODE_ROLE,
    PREFILL_ROLE,
    RolePool,
    Setup,
    check_holds_a_request,
    deployment_cost_usd_per_hour,
    prepare,
)

QUANTILES = {"p50": 0.50, "p90": 0.90, "p99": 0.99}


@dataclass(frozen=True)
class Snapshot:
    """The system at one arrival rate."""

    arrival_rate_per_s: float
    ttft_s: dict[str, float]
    tpot_s: dict[str, float]
    max_gap_s: float
    wan_mean_bits_per_s: float
    wan_utilization_frac: float
    wan_pool_utilization_frac: float
    wan_transfer_s: dict[str, float]
    rld_token_share_frac: float
    utilization_frac: dict[str, float]
    ttft_groups: tuple[LatencyGroup, ...]
    tpot_group: LatencyGroup

    def ttft_quantile_s(self, q: float) -> float:
        return grouped_quantiles_s([q], self.ttft_groups)[0]

    def tpot_quantile_s(self, q: float) -> float:
        return grouped_quantiles_s([q], [self.tpot_group])[0]


def _prefill(setup: Setup, rate: float) -> tuple[np.ndarray, WaitModel, float]:
    c = setup.classes
    inst, count = setup.prefill.instance, setup.prefill.group.count
    service = np.asarray(inst.prefill_time_s(c.uncached_tokens, c.cached_tokens), dtype=float)
    mean = c.mean(service)
    cv2 = c.mean((service - mean) ** 2) / mean**2 if mean > 0 else 0.0
    wait = ggc_wait(
        rate,
        mean,
        count,
        setup.scenario.workload.burstiness_cv2,
        cv2,
        what=f"prefill ({count} x {inst.gpus} {inst.gpu.id})",
    )
    return service, wait, rate * mean / count


def _decode(
    pool: RolePool,
    rate: float,
    tokens: np.ndarray,
    weights: np.ndarray,
    context: np.ndarray,
    what: str,
) -> DecodeLoad:
    """Decode pool serving classes with `weights` (per request of the whole stream)."""
    share = float(weights.sum())
    mean_tokens = float(np.dot(weights, tokens)) / share if share else 0.0
    token_mass = float(np.dot(weights, tokens))
    mean_context = float(np.dot(weights, tokens * context)) / token_mass if token_mass else 0.0
    return decode_fixed_point(
        pool.instance, pool.group.count, rate * share, mean_tokens, max(mean_context, 1.0), what
    )


def _wan(setup: Setup, rate: float):
    routes, c = setup.routes, setup.classes
    crossing = (
        routes.path != rt.LOCAL
        if setup.deployment.architecture != "pdd"
        else (routes.wan_payload_bytes > 0)
    )
    weights = c.weight[crossing]
    result = wan_transfer(
        setup.link,
        routes.wan_payload_bytes[crossing],
        weights / weights.sum(),
        rate * weights.sum(),
        setup.scenario.workload.burstiness_cv2,
    )
    transfer = np.zeros(len(c))
    transfer[crossing] = result.transfer_s
    return result, transfer


def _relay(setup: Setup, rate: float, wan_time_s: np.ndarray, md: DecodeLoad):
    """RLD's eager tokens (a fixed point with RLD's own step time) and handoff costs."""
    c, relay = setup.classes, setup.routes.path == rt.RELAY
    local = setup.routes.path == rt.LOCAL
    catch_up = relay & (setup.deployment.policy.handoff == "catch_up")
    context = c.input_tokens + c.output_tokens / 2
    label = (
        f"relay decode ({setup.relay.group.count} x {setup.relay.instance.gpus} "
        f"{setup.relay.instance.gpu.id})"
    )

    def handoff(eager: np.ndarray) -> np.ndarray:
        # one extend-decode step of MD that absorbs the handed tokens
        return np.asarray(
            setup.decode.instance.extend_decode_s(
                max(md.batch, 1.0), np.maximum(eager, 1.0), c.input_tokens + eager
            ),
            dtype=float,
        )

    def rld_load(step: float, extend: np.ndarray):
        eager = np.where(relay, rt.eager_tokens(wan_time_s, step, c.output_tokens), 0.0)
        extra = np.where(catch_up, rt.catch_up_extra_tokens(extend, step), 0.0)
        tokens = np.where(local, c.output_tokens, np.minimum(eager + extra, c.output_tokens))
        return (
            eager,
            tokens,
            _decode(setup.relay, rate, tokens, c.weight * (relay | local), context, label),
        )

    # the step time of RLD depends on its batch, which depends on the tokens it decodes:
    # iterate on the step with the handoff cost at the mean, then once exactly per class
    step = float(setup.relay.instance.decode_step_s(1, c.mean(c.input_tokens)))
    mean_extend = np.full(len(c), float(handoff(np.array([c.mean(wan_time_s) / step]))[0]))
    for _ in range(8):
        _, _, load = rld_load(step, mean_extend)
        if abs(load.step_s - step) < 1e-4 * step:
            break
        step = load.step_s
    eager = np.where(relay, rt.eager_tokens(wan_time_s, load.step_s, c.output_tokens), 0.0)
    extend = handoff(eager)
    eager, rld_tokens, load = rld_load(load.step_s, extend)
    stall = np.where(relay & ~catch_up, np.maximum(extend - md.step_s, 0.0), 0.0)
    return eager, rld_tokens, stall, load


def _weighted_quantiles(values: np.ndarray, weights: np.ndarray) -> dict[str, float]:
    qs = grouped_quantiles_s(list(QUANTILES.values()), [LatencyGroup(weights, values)])
    return dict(zip(QUANTILES, qs, strict=True))


def snapshot(setup: Setup, rate: float) -> Snapshot:
    """Metrics at arrival rate `rate`; SaturatedError if any queue cannot keep up."""
    c, routes, arch = setup.classes, setup.routes, setup.deployment.architecture
    context = c.input_tokens + c.output_tokens / 2
    service, p_wait, p_util = _prefill(setup, rate)
    util = {"prefill": p_util}
    wan_time = np.zeros(len(c))
    wan = None
    conn_wait = WaitModel.none()
    if setup.link is not None:
        wan, wan_time = _wan(setup, rate)
        conn_wait = wan.connection_wait
        util["wan_line"] = wan.line_utilization_frac
        util["wan_pool"] = wan.pool_utilization_frac
    decoded_remote = routes.path != rt.LOCAL if arch in ("pdd", "cdc_pd") else np.ones(len(c), bool)
    label = (
        f"{DECODE_ROLE[arch]} ({setup.decode.group.count} x {setup.decode.instance.gpus} "
        f"{setup.decode.instance.gpu.id})"
    )
    md_tokens = np.where(decoded_remote, c.output_tokens, 0.0)
    md = _decode(setup.decode, rate, md_tokens, c.weight * decoded_remote, context, label)
    eager = rld_tokens = stall = np.zeros(len(c))
    rld = None
    if setup.relay is not None:
        eager, rld_tokens, stall, rld = _relay(setup, rate, wan_time + conn_wait.mean_s(), md)
        md_tokens = np.where(decoded_remote, np.maximum(c.output_tokens - eager, 0.0), 0.0)
        md = _decode(setup.decode, rate, md_tokens, c.weight * decoded_remote, context, label)
        util["relay_decode"] = rld.utilization_frac
    util[DECODE_ROLE[arch]] = md.utilization_frac
    step_md = md.step_s
    if arch == "colocated":  # prefill steals time from the decode steps of the same instances
        step_md = md.step_s / max(1e-9, 1.0 - p_util)
        util["colocated"] = max(p_util, md.utilization_frac)
    rdma = rdma_transfer_s(
        routes.rdma_payload_bytes, setup.prefill.instance.gpus, setup.prefill.instance.gpu
    )
    rdma_visible = np.maximum(rdma - service, rdma / setup.model.num_layers)  # streamed by layer
    first_step_local = rld.step_s if rld is not None else step_md
    direct = routes.path == rt.DIRECT
    # a request joins a running batch at its next step boundary: half a step on average,
    # then its own first step (colocated: its own prefill ends on a boundary of that batch)
    join = 1.0 if arch == "colocated" else 1.5
    ttft_delay = service + join * np.where(direct, step_md, first_step_local)
    ttft_delay += np.where(direct, wan_time, rdma_visible if arch != "colocated" else 0.0)
    groups = [
        LatencyGroup(c.weight[direct], ttft_delay[direct], (p_wait, conn_wait)),
        LatencyGroup(c.weight[~direct], ttft_delay[~direct], (p_wait,)),
    ]
    ttft = dict(zip(QUANTILES, grouped_quantiles_s(list(QUANTILES.values()), groups), strict=True))
    rld_step = rld.step_s if rld is not None else step_md
    local_step = rld_step if arch == "pdd" else step_md
    gaps = np.maximum(c.output_tokens - 1, 1)
    tpot = np.where(
        routes.path == rt.RELAY,
        (eager * rld_step + stall + np.maximum(c.output_tokens - 1 - eager, 0) * step_md) / gaps,
        np.where(routes.path == rt.LOCAL, local_step, step_md),
    )
    multi = c.output_tokens > 1
    crossing_weights = c.weight * (wan_time > 0)
    transfer = {"p50": 0.0, "p99": 0.0}
    if wan is not None and crossing_weights.sum() > 0:
        qs = grouped_quantiles_s(
            [0.5, 0.99], [LatencyGroup(crossing_weights, wan_time, (conn_wait,))]
        )
        transfer = {"p50": qs[0], "p99": qs[1]}
    rld_share = float(np.dot(c.weight, rld_tokens) / np.dot(c.weight, c.output_tokens))
    return Snapshot(
        arrival_rate_per_s=rate,
        ttft_s=ttft,
        tpot_s=_weighted_quantiles(tpot[multi], c.weight[multi]),
        max_gap_s=float(max(step_md, rld_step, (stall + step_md).max(initial=0.0))),
        wan_mean_bits_per_s=wan.mean_load_bits_per_s if wan else 0.0,
        wan_utilization_frac=wan.line_utilization_frac if wan else 0.0,
        wan_pool_utilization_frac=wan.pool_utilization_frac if wan else 0.0,
        wan_transfer_s=transfer,
        rld_token_share_frac=rld_share if setup.relay is not None else 0.0,
        utilization_frac=util,
        ttft_groups=tuple(groups),
        tpot_group=LatencyGroup(c.weight[multi], tpot[multi]),
    )


def sla_checks(setup: Setup, snap: Snapshot) -> dict[str, dict[str, float]]:
    """Each SLA percentile: the limit and the predicted value."""
    checks = {}
    for pct, limit in setup.scenario.sla.ttft_s.items():
        checks[f"ttft_p{pct:g}_s"] = {"limit": limit, "value": snap.ttft_quantile_s(pct / 100)}
    for pct, limit in setup.scenario.sla.tpot_s.items():
        checks[f"tpot_p{pct:g}_s"] = {"limit": limit, "value": snap.tpot_quantile_s(pct / 100)}
    return checks


def meets_sla(setup: Setup, rate: float) -> bool:
    try:
        snap = snapshot(setup, rate)
    except SaturatedError:
        return False
    return all(c["value"] <= c["limit"] for c in sla_checks(setup, snap).values())


def goodput_rps(setup: Setup, rel_tol: float = 1e-3) -> float:
    """The largest arrival rate that meets every SLA percentile (bisection; 0 if none).

    Meeting the SLA is taken as monotone in the rate: every delay grows with load.
    """
    low, high = 0.0, max(setup.scenario.workload.arrival_rate_per_s, 1e-3)
    while meets_sla(setup, high):
        low, high = high, 2 * high
        if high > 1e7:
            return low
    if low == 0.0:
        low = high / 1024
        if not meets_sla(setup, low):
            return 0.0
    while high - low > rel_tol * high:
        mid = (low + high) / 2
        if meets_sla(setup, mid):
            low = mid
        else:
            high = mid
    return low


# Above this line utilisation the stationary WAN model is outside what it can vouch for:
# the published narrow-mix run (pdd-system.md §3) saturated its connection pool and
# queued for seconds at about this load, which no steady-state flow model reproduces.
WAN_TRUST_LIMIT_FRAC = 0.90


HBM_BOUND_ROLES = ("decode", "main_decode", "relay_decode")
HBM_WARN_FRAC = 0.8  # decode batch / the batch that fits HBM


def regime_warnings(snap: Snapshot | None) -> tuple[str, ...]:
    """Where the closed forms are known to be optimistic, say so beside the numbers."""
    if snap is None:
        return ("saturated at the offered rate: latency percentiles are undefined",)
    out = []
    if snap.wan_utilization_frac >= WAN_TRUST_LIMIT_FRAC:
        out.append(
            f"WAN line at {snap.wan_utilization_frac:.0%} of capacity: measured runs this close "
            "to capacity saturate the connection pool and queue for seconds, which this "
            "steady-state model does not predict; lease more line or plan below "
            f"{WAN_TRUST_LIMIT_FRAC:.0%}"
        )
    decode = {r: u for r, u in snap.utilization_frac.items() if r in HBM_BOUND_ROLES}
    full = [r for r, u in decode.items() if u >= HBM_WARN_FRAC]
    if full:
        out.append(
            f"{', '.join(full)} at {max(decode[r] for r in full):.0%} of the batch that fits "
            "HBM: where decode is bound by HBM the simulator carries 14-28 % more goodput "
            "than this model (benchmarks/agreement.py); the goodput here is conservative"
        )
    if "colocated" in snap.utilization_frac:
        out.append(
            "colocated: prefills pause decode in bursts, spread evenly here; the simulator "
            "puts TTFT P90 about 20 % and TPOT P90 about 13 % above this model at half load "
            "(benchmarks/agreement.py)"
        )
    return tuple(out)


def binding_role(utilization: dict[str, float]) -> str:
    return max(utilization, key=utilization.get) if utilization else ""


def evaluate(
    setup: Setup, rate: float | None = None, goodput_rel_tol: float = 1e-3
) -> tuple[Metrics, Snapshot | None]:
    """Metrics at the offered rate (the scenario's unless given) plus the goodput."""
    check_holds_a_request(setup)  # as simulate does: such a plan is bad input, not saturated
    rate = setup.scenario.workload.arrival_rate_per_s if rate is None else rate
    c = setup.classes
    try:
        snap = snapshot(setup, rate)
    except SaturatedError:
        snap = None
    goodput = goodput_rps(setup, goodput_rel_tol)
    shown = snap  # None: saturated at the offered rate; percentiles are then undefined
    checks = sla_checks(setup, snap) if snap else {}
    met = bool(snap) and all(v["value"] <= v["limit"] for v in checks.values())
    nan = {"p50": float("nan"), "p90": float("nan"), "p99": float("nan")}
    metrics = Metrics(
        offered_rps=rate,
        goodput_rps=goodput,
        cost_usd_per_hour=setup.cost_usd_per_hour,
        ttft_s=shown.ttft_s if shown else nan,
        tpot_s=shown.tpot_s if shown else nan,
        max_inter_token_gap_s=shown.max_gap_s if shown else float("nan"),
        wan_mean_bits_per_s=shown.wan_mean_bits_per_s if shown else 0.0,
        wan_utilization_frac=shown.wan_utilization_frac if shown else 0.0,
        wan_pool_utilization_frac=shown.wan_pool_utilization_frac if shown else 0.0,
        wan_transfer_s=shown.wan_transfer_s if shown else {"p50": 0.0, "p99": 0.0},
        rld_token_share_frac=shown.rld_token_share_frac if shown else 0.0,
        role_utilization_frac=shown.utilization_frac if shown else {},
        binding_role=binding_role(shown.utilization_frac) if shown else "",
        sla_met=met,
        mean_output_tokens=c.mean(c.output_tokens),
        mean_uncached_input_tokens=c.mean(c.uncached_tokens),
        sla_checks=checks,
        warnings=regime_warnings(snap),
    )
    return metrics, snap
