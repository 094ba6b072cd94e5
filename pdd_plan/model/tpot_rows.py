"""The rows of the TPOT and largest-gap distributions (model/decode/tpot.py) for a deployment
at one rate: one row per request class and path (direct or overflowed to MD, relayed and
kept on RLD, finished near prefill), with its mean TPOT, the spread of the batch it
shares, the interruptions it meets and its handoff gap (one-shot: the handoff; catch-up:
the switch from RLD's last token to MD's next, one row per switch value of
`handoff.catch_up_switch_gaps_s`)."""

from __future__ import annotations

import numpy as np

from pdd_plan.model import routing as rt
from pdd_plan.model.decode.handoff import catch_up_switch_gaps_s
from pdd_plan.model.decode.tpot import LifeSpread, TpotRows
from pdd_plan.model.decode_side import DecodeSide, context_tokens
from pdd_plan.model.setup import Setup
from pdd_plan.model.workload.row_merge import merge_equal_rows as _merge_equal_rows


def _md_interruptions(setup: Setup, side: DecodeSide, rate: float, service: np.ndarray):
    """(rate per instance, sizes, weights) of what interrupts the finishing role's steps:
    colocated prefills, or MD's extend steps of handed-off requests."""
    c, arch = setup.classes, setup.deployment.architecture
    n = max(setup.decode.group.count, 1)
    if arch == "colocated":
        return rate / n, np.asarray(service, float), c.weight
        # (colocated_pauses turns these prefills into the pauses they cause)
    rl, h = side.relay, side.handoff
    if rl is None or h is None:
        return 0.0, np.zeros(0), np.zeros(0)
    handed = (setup.routes.path == rt.RELAY) & (rl.rld_tokens < c.output_tokens)
    weights = c.weight * handed * rl.kept_frac
    extra = np.maximum(np.asarray(h.extend_s, float) - side.md.step_s, 0.0)
    return rate * float(weights.sum()) / n, extra[handed], weights[handed]


def tpot_rows(setup: Setup, side: DecodeSide, rate: float, service: np.ndarray,
              prefill_wait=None) -> TpotRows:  # fmt: skip
    """`prefill_wait`: the prefill pool's wait (WaitModel), for the prefills a colocated
    request's instance runs between its prefill and its first decode step."""
    c, path = setup.classes, setup.routes.path
    md_step = side.md.step_s  # the decode step itself (colocated: without the pauses)
    gaps = np.maximum(c.output_tokens - 1, 1.0)
    per_inst, sizes, size_w = _md_interruptions(setup, side, rate, service)
    wall = side.md_step_s  # a step as the requests see it (colocated: with the pauses)
    second, util = 1.0, 1.0 - md_step / wall  # colocated: an instance's prefill share
    if setup.deployment.architecture == "colocated":
        sizes, second, per_inst = colocated_pauses(sizes, util, setup.decode.group.count,
                                                   per_inst)  # fmt: skip
        wall = md_step  # pauses start per unit of decode time, each a busy period
    holds = side.md_tokens * md_step
    context = context_tokens(c, side.md_tokens, side.md_weights)
    spread = LifeSpread(setup.decode.instance, side.md.batch, setup.decode.group.count,
                        context, holds, side.md_weights)  # fmt: skip

    def md_part(tokens: np.ndarray):
        """sd and interruptions of `tokens` steps on the finishing role."""
        sd = spread.sd_s(tokens * md_step)
        return sd / gaps * tokens, per_inst * tokens * wall

    ones = np.ones(len(c))
    sd_all, m_all = md_part(gaps)
    mean_all = md_step * ones
    if setup.deployment.architecture == "colocated":
        # the prefill emitted the first token; the first decode token follows the rest of
        # the step its prefill paused (half a step on average) and the prefills queued
        # by then: those waiting when it started and those that arrived while it ran
        # and found the other instances busy too, its instance's share of them
        mean_all = md_step + 0.5 * md_step / gaps
        m_all = m_all + backlog_prefills(rate, np.asarray(service, float), prefill_wait,
                                         util, setup.decode.group.count)  # fmt: skip
    rows = [(c.weight, mean_all, sd_all, m_all, md_step * ones, 0.0 * ones)]
    rl = side.relay
    if rl is not None:
        near = path != rt.DIRECT
        rows = [(c.weight * np.where(near, rl.blocked_frac, 1.0), *rows[0][1:])]
        rld_tokens = np.minimum(rl.rld_tokens, gaps)
        md_tokens = np.maximum(gaps - rld_tokens, 0.0)
        one_shot = setup.deployment.policy.handoff != "catch_up"
        relay = path == rt.RELAY
        switch = [np.zeros(len(c))]  # the handoff's gap, at each equally likely RLD phase
        if side.handoff is not None:
            handed = relay & (md_tokens > 0)
            totals = (
                [side.handoff.total_s]
                if one_shot
                else catch_up_switch_gaps_s(side.handoff, rl.step_s)
            )  # catch-up: MD trails RLD by the ids' trip
            switch = [np.where(handed, g, 0.0) for g in totals]
        sd, m = md_part(np.where(relay, md_tokens, 0.0))
        step = np.where(relay & (md_tokens > 0), max(rl.step_s, md_step), rl.step_s)
        for gap in switch:
            stall = np.maximum(gap - md_step, 0.0)
            mean = (rld_tokens * rl.step_s + stall + md_tokens * md_step) / gaps
            mean = np.where(relay, mean, rl.step_s)
            w = c.weight * near * rl.kept_frac / len(switch)
            rows.append((w, mean, sd, m, step, gap))
    multi = c.output_tokens > 1
    cols = [np.concatenate([r[i][multi] for r in rows]) for i in range(6)]
    cols.append(np.concatenate([gaps[multi]] * len(rows)))
    # rows equal to 9 significant digits as one (model/workload/row_merge.py): most classes differ
    # only in what does not change their TPOT, so the root searches run on fewer rows
    weights, rest = _merge_equal_rows(cols[0], np.stack(cols[1:], axis=1))
    mean, sd, m, step, fixed, all_gaps = rest.T
    return TpotRows(weights, mean, sd, m, all_gaps, step, fixed,
                    np.asarray(sizes, float), np.asarray(size_w, float), second)  # fmt: skip


def colocated_pauses(service_s: np.ndarray, util_frac: float, instances: int,
                     prefills_per_s: float):  # fmt: skip
    """A prefill arriving while a request decodes on a colocated instance pauses it for
    a busy period of prefills, not one prefill: arrivals during the pause go first too
    (prefill first), those its instance takes. With c instances sharing the queue a new
    arrival waits for this one only if the others are busy too: the busy period of load
    u = util^c. Busy period of one prefill S: mean E[S] / (1 - u), second moment
    E[S²] / (1 - u)^3. The instance pauses util / (1 - util) of its decode time whatever
    the clustering, so the busy periods start at prefills_per_s (1 - u) / (1 - util) per
    second of decode. Returns the sizes scaled to the busy periods' mean, the factor that
    lifts their second moment to it (TpotRows.size_second_factor) and that start rate."""
    util = min(max(util_frac, 0.0), 0.99)
    u = util ** max(instances, 1)
    starts = prefills_per_s * (1.0 - u) / (1.0 - util)
    return np.asarray(service_s, float) / (1.0 - u), 1.0 / (1.0 - u), starts


def backlog_prefills(rate: float, service_s: np.ndarray, wait, util_frac: float,
                     instances: int) -> np.ndarray:  # fmt: skip
    """Per class, the prefills a colocated instance runs after a request's own prefill
    and before its first decode step (prefill first). The request leaves behind those
    that arrived while it waited (Little: rate x E[W]) and while it ran and found the
    other instances busy too (rate x S x pi / util: pi, the chance an arrival finds all
    busy, over util, its instance's own busy share, as the arrivals see it). Its instance
    is the one free to take the first of them; the others share the rest."""
    if wait is None or rate <= 0:
        return np.zeros(len(service_s))
    n = max(instances, 1)
    others_busy = min(wait.prob_wait / util_frac, 1.0) if util_frac > 0 else 0.0
    queue = rate * (wait.mean_s() + service_s * others_busy)
    first = 1.0 - np.exp(-queue)
    return first + (queue - first) / n
