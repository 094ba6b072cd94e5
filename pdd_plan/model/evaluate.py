"""Scenario + Deployment -> Metrics: latency percentiles, goodput, cost, BCR.

`prepare` does everything that does not depend on the arrival rate (request classes,
routes, roofline instances, prices); `snapshot` evaluates one arrival rate (vectorised over
request classes); `goodput_rps` bisects on the arrival rate for the largest one that
meets the SLA; `evaluate` puts it together.
"""

from __future__ import annotations

import math

import numpy as np

from pdd_plan.errors import SaturatedError
from pdd_plan.model import routing as rt
from pdd_plan.model.caches import tier_read_back
from pdd_plan.model.caches.tier_read_back import md_ready_after_prefill_s
from pdd_plan.model.decode.decode_admission import merge_waits
from pdd_plan.model.decode.mixed_pool import (
    GroupLoad,
    combine_rows,
    members,
    weighted_dict,
    weighted_mean,
)
from pdd_plan.model.decode.tpot import weighted_quantiles_dict
from pdd_plan.model.decode_side import decode_side
from pdd_plan.model.metrics import Metrics
from pdd_plan.model.network.network import wan_transfer
from pdd_plan.model.network.rdma import rdma_transfer_s
from pdd_plan.model.queueing.latency_mixture import (
    LatencyGroup,
    grouped_quantile_at_most,
    grouped_quantiles_s,
)
from pdd_plan.model.queueing.prefill_batch import prefill_queue
from pdd_plan.model.queueing.queueing import WaitModel
from pdd_plan.model.regime import (  # noqa: F401  (re-exported: the evaluate API)
    DECODE_ROLES,
    DECODE_TRUST_LIMIT_FRAC,
    WAN_TRUST_LIMIT_FRAC,
    binding_role,
    regime_warnings,
)
from pdd_plan.model.setup import (  # noqa: F401  (re-exported: the evaluate API)
    DECODE_ROLE,
    PREFILL_ROLE,
    RolePool,
    Setup,
    check_holds_a_request,
    deployment_cost_usd_per_hour,
    prepare,
)
from pdd_plan.model.snapshot import Snapshot
from pdd_plan.model.tpot_rows import tpot_rows

QUANTILES = {"p50": 0.50, "p90": 0.90, "p99": 0.99}


def _prefill(setup: Setup, rate: float) -> tuple[np.ndarray, WaitModel, float]:
    """Each class's prefill time, its wait and the pool's load (model/queueing/prefill_batch.py)."""
    return prefill_queue(
        setup.prefill.instance,
        setup.classes,
        setup.prefill.group.count,
        rate,
        setup.scenario.workload.burstiness_cv2,
        setup.scenario.engine.prefill_token_budget_per_gpu,
        setup.deployment.architecture,
    )


def _wan(setup: Setup, rate: float, service: np.ndarray, extra_hold_s=None):
    """The line at `rate`: its result and each class's time after prefill end until MD
    holds the KV (streamed during prefill if the scenario says so); `extra_hold_s`: per
    class, connection time after the transfer (the handoff, `pool_hold: handoff_end`)."""
    routes, c = setup.routes, setup.classes
    crossing = (
        routes.path != rt.LOCAL
        if setup.deployment.architecture != "pdd"
        else (routes.wan_payload_bytes > 0)
    )
    weights = c.weight[crossing]
    stream = setup.scenario.wan.stream_during_prefill
    result = wan_transfer(
        setup.link,
        routes.wan_payload_bytes[crossing],
        weights / weights.sum(),
        rate * weights.sum(),
        setup.scenario.workload.burstiness_cv2,
        prefill_s=service[crossing] if stream else None,
        num_layers=setup.model.num_layers,
        extra_hold_s=None if extra_hold_s is None else extra_hold_s[crossing],
    )
    transfer = np.zeros(len(c))
    transfer[crossing] = result.transfer_s
    read = tier_read_back.read_back_s(setup, c.input_tokens, routes.md_hit_rate)
    return result, np.where(crossing, md_ready_after_prefill_s(transfer, read, service), 0.0)


def _wan_and_decode(setup: Setup, rate: float, service: np.ndarray, p_util: float, share=1.0):
    """The line and the decode side. With `pool_hold: handoff_end` a relayed request kept
    by RLD holds its connection through the handoff, whose length comes from the decode
    side: solved once with connections released at transfer end, then again with the
    handoff added to the hold (the handoff does not depend on the pool: one pass).
    `share`: of the decode role's requests, those `setup.decode` takes (mixed_pool.py)."""
    wan, wan_time = _wan(setup, rate, service)
    side = decode_side(setup, rate, wan_time + wan.connection_wait.mean_s(), p_util, share)
    if setup.scenario.wan.pool_hold == "handoff_end" and side.handoff is not None:
        relay = setup.routes.path == rt.RELAY
        extra = np.where(relay, side.relay.kept_frac * side.handoff.total_s, 0.0)
        wan, wan_time = _wan(setup, rate, service, extra)
        side = decode_side(setup, rate, wan_time + wan.connection_wait.mean_s(), p_util, share)
    return wan, wan_time, side


def _decode_part(setup: Setup, rate: float, service, p_util: float, share: float):
    """(line, each class's transfer time, connection wait, decode side) with
    `setup.decode` taking `share` of the decode role's requests."""
    if setup.link is None:
        wan_time = np.zeros(len(setup.classes))
        return None, wan_time, WaitModel.none(), decode_side(setup, rate, wan_time, p_util, share)
    wan, wan_time, side = _wan_and_decode(setup, rate, service, p_util, share)
    return wan, wan_time, wan.connection_wait, side


def _group_load(setup: Setup, share: float, side) -> GroupLoad:
    g = setup.decode.group
    return GroupLoad(g.gpu, g.gpus_per_instance, g.count, share, side.md.batch, side.md_slots,
                     side.md.utilization_frac, side.md_admission.wait.mean_s())  # fmt: skip


def _scaled(groups: list[LatencyGroup], share: float) -> list[LatencyGroup]:
    return [LatencyGroup(g.weights * share, g.delays_s, g.waits) for g in groups]


def _ttft_groups(setup, side, service, p_wait, conn_wait, wan_time) -> list[LatencyGroup]:
    """TTFT per class: prefill queue and service, the transfer to the instance that emits
    the first token, the wait for a decode slot there, half a step to join its batch and
    its first step. Requests that find RLD full take the direct path."""
    c, routes, arch = setup.classes, setup.routes, setup.deployment.architecture
    rdma = rdma_transfer_s(
        routes.rdma_payload_bytes, setup.prefill.instance.gpus, setup.prefill.instance.gpu
    )
    rdma_visible = np.maximum(rdma - service, rdma / setup.model.num_layers)  # streamed by layer
    md_wait = side.md_admission.wait
    # a request joins a running batch at its next step boundary: half a step on average,
    # then its own first step (colocated: its own prefill ends on a boundary of that batch)
    via_md = service + wan_time + 1.5 * side.md_step_s
    direct_waits = (p_wait, merge_waits(conn_wait, md_wait))
    direct = routes.path == rt.DIRECT
    if arch == "colocated":  # the prefill pass emits the first token (no transfer)
        return [LatencyGroup(c.weight, service, (p_wait,))]
    if arch == "idc_pd":
        return [LatencyGroup(c.weight, service + rdma_visible + 1.5 * side.md_step_s,
                             (p_wait, md_wait))]  # fmt: skip
    groups = [LatencyGroup(c.weight[direct], via_md[direct], direct_waits)]
    if side.relay is not None:
        kept, over = side.relay.kept_frac[~direct], side.relay.blocked_frac[~direct]
        near = service + rdma_visible + 1.5 * side.relay.step_s
        groups.append(LatencyGroup(c.weight[~direct] * kept, near[~direct], (p_wait,)))
        if over.max(initial=0.0) > 1e-9:  # below, the overflowed requests move no percentile
            groups.append(LatencyGroup(c.weight[~direct] * over, via_md[~direct], direct_waits))
    return groups


def _parts(setup: Setup, rate: float, service, p_util: float) -> list[tuple]:
    """One part per decode group (one unless the role is mixed): (share, its setup, line,
    transfer times, connection wait, decode side); the line is the same for every group
    but with `pool_hold: handoff_end` (the first group's is reported)."""
    return [(s, su, *_decode_part(su, rate, service, p_util, s)) for s, su in members(setup)]


def _all_ttft_groups(parts, service, p_wait) -> list[LatencyGroup]:
    return [
        g
        for s, su, _, w_time, c_wait, sd in parts
        for g in _scaled(_ttft_groups(su, sd, service, p_wait, c_wait, w_time), s)
    ]


def _all_tpot_rows(parts, rate: float, service, p_wait: WaitModel):
    # p_wait: colocated, the prefills queued when a request's own prefill ends run before
    # its first decode step (tpot_rows.backlog_prefills)
    return combine_rows(
        [part[0] for part in parts],
        [tpot_rows(su, sd, rate * s, service, p_wait) for s, su, *_, sd in parts],
    )


def _utilization(arch: str, parts, p_util: float) -> dict[str, float]:
    """Each role's load (and the line's) from the prefill pool's and the decode parts'."""
    util = {"prefill": p_util}
    shares = [part[0] for part in parts]
    _, _, wan, _, _, side = parts[0]
    sides = [part[-1] for part in parts]
    if wan is not None:
        util["wan_line"] = wan.line_utilization_frac
        util["wan_pool"] = wan.pool_utilization_frac
    if side.relay is not None:
        util["relay_decode"] = weighted_mean(shares, [x.relay.utilization_frac for x in sides])
    util[DECODE_ROLE[arch]] = max(x.md.utilization_frac for x in sides)  # the fullest group
    if arch == "colocated":
        util["colocated"] = max(p_util, side.md.utilization_frac)
    return util


def utilization_frac(setup: Setup, rate: float) -> dict[str, float]:
    """`snapshot(setup, rate).utilization_frac` without the percentiles (the search's
    utilisation cap asks only this); SaturatedError if any queue cannot keep up."""
    service, _, p_util = _prefill(setup, rate)
    return _utilization(setup.deployment.architecture, _parts(setup, rate, service, p_util), p_util)


def snapshot(setup: Setup, rate: float) -> Snapshot:
    """Metrics at arrival rate `rate`; SaturatedError if any queue cannot keep up."""
    c, arch = setup.classes, setup.deployment.architecture
    service, p_wait, p_util = _prefill(setup, rate)
    parts = _parts(setup, rate, service, p_util)
    util = _utilization(arch, parts, p_util)
    shares = [part[0] for part in parts]
    _, _, wan, wan_time, conn_wait, side = parts[0]
    sides = [part[-1] for part in parts]
    groups = _all_ttft_groups(parts, service, p_wait)
    ttft = dict(zip(QUANTILES, grouped_quantiles_s(list(QUANTILES.values()), groups), strict=True))
    rows = _all_tpot_rows(parts, rate, service, p_wait)
    crossing_weights = c.weight * (wan_time > 0)
    transfer = {"p50": 0.0, "p99": 0.0}
    if wan is not None and crossing_weights.sum() > 0:
        qs = grouped_quantiles_s(
            [0.5, 0.99], [LatencyGroup(crossing_weights, wan_time, (conn_wait,))]
        )
        transfer = {"p50": qs[0], "p99": qs[1]}
    rld_share = 0.0
    if side.relay is not None:
        rld = [x.relay.rld_tokens * x.relay.kept_frac for x in sides]
        rld_share = weighted_mean(
            shares, [float(np.dot(c.weight, r) / np.dot(c.weight, c.output_tokens)) for r in rld]
        )
    return Snapshot(
        arrival_rate_per_s=rate,
        ttft_s=ttft,
        tpot_s=weighted_quantiles_dict(rows, rows.tpot_cdf, QUANTILES),
        max_gap_s=rows.max_gap_s(),
        largest_gap_s=weighted_quantiles_dict(rows, rows.gap_cdf, QUANTILES),
        wan_mean_bits_per_s=wan.mean_load_bits_per_s if wan else 0.0,
        wan_utilization_frac=wan.line_utilization_frac if wan else 0.0,
        wan_pool_utilization_frac=wan.pool_utilization_frac if wan else 0.0,
        wan_transfer_s=transfer,
        rld_token_share_frac=rld_share,
        utilization_frac=util,
        ttft_groups=tuple(groups),
        tpot_rows=rows,
        relay_overflow_frac=weighted_mean(shares, [x.overflow_frac for x in sides]),
        decode_admission_wait_s=weighted_mean(
            shares, [x.md_admission.wait.mean_s() for x in sides]
        ),
        handoff_s=weighted_dict(
            shares, [x.handoff.parts() if x.handoff is not None else {} for x in sides]
        ),
        decode_groups=tuple(_group_load(su, s, sd) for s, su, *_, sd in parts)
        if setup.mixed
        else (),
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
    """Whether every SLA percentile holds at `rate`: what `sla_checks` of the snapshot
    says, computing only what the SLA asks (the TTFT percentiles first; TPOT's rows only
    if they hold), each percentile's verdict that of the root search `sla_checks` runs,
    mostly read from the CDF's sign beside the limit (model/queueing/quantile_verdict.py)."""
    try:
        return _meets_sla(setup, rate)
    except SaturatedError:
        return False


def _meets_sla(setup: Setup, rate: float) -> bool:
    sla = setup.scenario.sla
    service, p_wait, p_util = _prefill(setup, rate)
    parts = _parts(setup, rate, service, p_util)
    if sla.ttft_s:
        groups = _all_ttft_groups(parts, service, p_wait)
        if not all(
            grouped_quantile_at_most(pct / 100, lim, groups) for pct, lim in sla.ttft_s.items()
        ):
            return False
    if sla.tpot_s:
        rows = _all_tpot_rows(parts, rate, service, p_wait)
        return all(
            rows.quantile_at_most(rows.tpot_cdf, pct / 100, lim) for pct, lim in sla.tpot_s.items()
        )
    return True


def goodput_rps(setup: Setup, rel_tol: float = 1e-3, known=(0.0, math.inf), answered=None) -> float:
    """The largest arrival rate that meets every SLA percentile (bisection; 0 if none).

    Meeting the SLA is taken as monotone in the rate: every delay grows with load. So
    `known` = (a rate met, a rate missed), from an earlier search on the same setup,
    answers the bisection's questions at or below the first and at or above the second
    without a snapshot: the same steps, the same answer, fewer evaluations. `answered`:
    {rate: met} for rates already judged (`evaluate`'s offered rate), asked no more.
    """
    met, missed = known
    answered = answered or {}

    def meets(rate: float) -> bool:
        if rate <= met or rate >= missed:
            return rate <= met
        got = answered.get(rate)
        return meets_sla(setup, rate) if got is None else got

    low, high = 0.0, max(setup.scenario.workload.arrival_rate_per_s, 1e-3)
    while meets(high):
        low, high = high, 2 * high
        if high > 1e7:
            return low
    if low == 0.0:
        low = high / 1024
        if not meets(low):
            return 0.0
    while high - low > rel_tol * high:
        mid = (low + high) / 2
        if meets(mid):
            low = mid
        else:
            high = mid
    return low


def evaluate(
    setup: Setup, rate: float | None = None, goodput_rel_tol: float = 1e-3, known=(0.0, math.inf)
) -> tuple[Metrics, Snapshot | None]:
    """Metrics at the offered rate (the scenario's unless given) plus the goodput
    (`known`: rates met and missed, as `goodput_rps` takes them)."""
    check_holds_a_request(setup)  # as simulate does: such a plan is bad input, not saturated
    rate = setup.scenario.workload.arrival_rate_per_s if rate is None else rate
    c = setup.classes
    try:
        snap = snapshot(setup, rate)
    except SaturatedError:
        snap = None
    shown = snap  # None: saturated at the offered rate; percentiles are then undefined
    checks = sla_checks(setup, snap) if snap else {}
    met = bool(snap) and all(v["value"] <= v["limit"] for v in checks.values())
    # the goodput search asks first about the offered rate: answered here already
    goodput = goodput_rps(setup, goodput_rel_tol, known, answered={rate: met})
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
        largest_gap_s=shown.largest_gap_s if shown else nan,
        relay_overflow_frac=shown.relay_overflow_frac if shown else 0.0,
        decode_admission_wait_s=shown.decode_admission_wait_s if shown else 0.0,
        handoff_s=shown.handoff_s if shown else {},
    )
    return metrics, snap
