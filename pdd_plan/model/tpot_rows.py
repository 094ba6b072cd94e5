"""The rows of the TPOT and largest-gap distributions (model/tpot.py) for a deployment
at one rate: one row per request class and path (direct or overflowed to MD, relayed and
kept on RLD, finished near prefill), with its mean TPOT, the spread of the batch it
shares, the interruptions it meets and its handoff gap (one-shot: the handoff; catch-up:
the switch from RLD's last token to MD's next, one row per switch value of
`handoff.catch_up_switch_gaps_s`)."""

from __future__ import annotations

import numpy as np

from pdd_plan.model import routing as rt
from pdd_plan.model.decode_side import DecodeSide, context_tokens
from pdd_plan.model.handoff import catch_up_switch_gaps_s
from pdd_plan.model.row_merge import merge_equal_rows as _merge_equal_rows
from pdd_plan.model.setup import Setup
from pdd_plan.model.tpot import LifeSpread, TpotRows


def _md_interruptions(setup: Setup, side: DecodeSide, rate: float, service: np.ndarray):
    """(rate per instance, sizes, weights) of what interrupts the finishing role's steps:
    colocated prefills, or MD's extend steps of handed-off requests."""
    c, arch = setup.classes, setup.deployment.architecture
    n = max(setup.decode.group.count, 1)
    if arch == "colocated":
        return rate / n, np.asarray(service, float), c.weight
    rl, h = side.relay, side.handoff
    if rl is None or h is None:
        return 0.0, np.zeros(0), np.zeros(0)
    handed = (setup.routes.path == rt.RELAY) & (rl.rld_tokens < c.output_tokens)
    weights = c.weight * handed * rl.kept_frac
    extra = np.maximum(np.asarray(h.extend_s, float) - side.md.step_s, 0.0)
    return rate * float(weights.sum()) / n, extra[handed], weights[handed]


def tpot_rows(setup: Setup, side: DecodeSide, rate: float, service: np.ndarray) -> TpotRows:
    c, path = setup.classes, setup.routes.path
    md_step = side.md.step_s  # the decode step itself (colocated: without the pauses)
    gaps = np.maximum(c.output_tokens - 1, 1.0)
    per_inst, sizes, size_w = _md_interruptions(setup, side, rate, service)
    wall = side.md_step_s  # a step as the requests see it (colocated: with the pauses)
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
    rows = [(c.weight, md_step * ones, sd_all, m_all, md_step * ones, 0.0 * ones)]
    rl = side.relay
    if rl is not None:
        near = path != rt.DIRECT
        rows = [(c.weight * np.where(near, rl.overflow_frac, 1.0), *rows[0][1:])]
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
    # rows equal to 9 significant digits as one (model/row_merge.py): most classes differ
    # only in what does not change their TPOT, so the root searches run on fewer rows
    weights, rest = _merge_equal_rows(cols[0], np.stack(cols[1:], axis=1))
    mean, sd, m, step, fixed, all_gaps = rest.T
    return TpotRows(weights, mean, sd, m, all_gaps, step, fixed,
                    np.asarray(sizes, float), np.asarray(size_w, float))  # fmt: skip
