"""The decode side of a deployment at one arrival rate: the relay pool (RLD, by Little's
law with overflow), the decode role that finishes requests (MD, IDC-PD's decode or the
colocated instances) with its slots and admission wait, and the handoff between them.

MD's load depends on how many tokens RLD takes, and RLD's handoff on MD's step and slot
wait: MD is solved once with every output on it (the handoff's first MD), then RLD and MD
again at the slot wait that MD, left RLD's tokens, itself has (`_settle`).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from pdd_plan.errors import SaturatedError
from pdd_plan.model import routing as rt
from pdd_plan.model.decode.decode_admission import (
    Admission,
    admission_wait,
    count_cap,
    reserve_output_tokens,
    reserved_tokens,
    slots_per_instance,
)
from pdd_plan.model.decode.decode_pool import DecodeLoad, decode_fixed_point
from pdd_plan.model.decode.handoff import DEFAULT_ENGINE_FIXED_S, Handoff, handoff
from pdd_plan.model.decode.relay import RelayLoad, relay_load
from pdd_plan.model.queueing.queueing import WaitModel
from pdd_plan.model.setup import DECODE_ROLE, RolePool, Setup


@dataclass(frozen=True)
class DecodeSide:
    md: DecodeLoad
    md_slots: int
    md_step_s: float  # as the requests see it (colocated: stretched by the prefills)
    md_admission: Admission
    md_tokens: np.ndarray  # per class: tokens MD decodes per request of the class
    md_weights: np.ndarray  # per class: requests reaching MD, per request of the stream
    relay: RelayLoad | None
    handoff: Handoff | None  # at MD's final load

    @property
    def overflow_frac(self) -> float:
        return self.relay.overflow_frac if self.relay is not None else 0.0


def context_tokens(c, tokens: np.ndarray, weights: np.ndarray) -> float:
    """Mean context of a pool's batch: token-weighted prompt + half the tokens decoded."""
    token_mass = float(np.dot(weights, tokens))
    if not token_mass:
        return 1.0
    return max(float(np.dot(weights, tokens * (c.input_tokens + tokens / 2))) / token_mass, 1.0)


def pool_load(
    setup: Setup, pool: RolePool, rate: float, tokens: np.ndarray, weights: np.ndarray, what: str
) -> tuple[DecodeLoad, int]:
    """Batch per instance and slots K of one instance for classes with `weights` (per
    request of the whole stream) decoding `tokens` each."""
    share = float(weights.sum())
    mean_tokens = float(np.dot(weights, tokens)) / share if share else 0.0
    slots, context = pool_slots(setup, pool, tokens, weights)
    load = decode_fixed_point(
        pool.instance, pool.group.count, rate * share, mean_tokens, context, what, slots
    )
    return load, slots


def pool_slots(setup: Setup, pool: RolePool, tokens: np.ndarray, weights: np.ndarray):
    """(slots K of one instance, the batch's mean context) for classes with `weights`
    decoding `tokens` each."""
    c = setup.classes
    context = context_tokens(c, tokens, weights)
    reserve = reserved_tokens(
        c.input_tokens, c.output_tokens, reserve_output_tokens(setup.scenario)
    )
    return slots_per_instance(
        pool.instance, reserve, weights * tokens, count_cap(pool, context)
    ), context


def engine_fixed_s(setup: Setup) -> float:
    fixed = getattr(setup.scenario.engine, "handoff_fixed_s", None)
    return DEFAULT_ENGINE_FIXED_S if fixed is None else fixed


def _label(setup: Setup, pool: RolePool, role: str) -> str:
    return f"{role} ({pool.group.count} x {pool.instance.gpus} {pool.instance.gpu.id})"


def _md(setup, rate, tokens, weights, stretch: float) -> tuple[DecodeLoad, int, Admission]:
    arch = setup.deployment.architecture
    label = _label(setup, setup.decode, DECODE_ROLE[arch])
    # colocated: decode runs 1 / stretch of the wall time and requests keep arriving
    # through the prefills' pauses, so a decode step meets stretch x the batch Little's
    # law gives at the wall-clock rate (requests per unit of decode time)
    load, slots = pool_load(setup, setup.decode, rate * stretch, tokens, weights, label)
    step = load.step_s * stretch
    n = setup.decode.group.count
    # colocated: a request decodes where it was prefilled, so each instance is its own
    # queue of K slots (a 1/n share of the arrivals); elsewhere the role pools n x K
    own = arch == "colocated"
    adm = admission_wait(
        rate / n if own else rate,
        tokens * step,
        weights,
        slots if own else n * slots,
        setup.scenario.workload.burstiness_cv2,
        f"{label} slots",
    )
    return load, slots, adm


def decode_side(
    setup: Setup, rate: float, wan_time_s: np.ndarray, prefill_util: float, md_share=1.0
):
    """`md_share`: the share of the finishing role's requests `setup.decode` takes (one
    group of a mixed role, model/decode/mixed_pool.py); the relay sees the whole stream."""
    c, path, arch = setup.classes, setup.routes.path, setup.deployment.architecture
    stretch = 1.0 / max(1e-9, 1.0 - prefill_util) if arch == "colocated" else 1.0
    remote = path != rt.LOCAL if arch in ("pdd", "cdc_pd") else np.ones(len(c), bool)
    # colocated: the prefill pass emits the first token, decode the rest
    decoded = c.output_tokens - 1.0 if arch == "colocated" else c.output_tokens
    full = np.where(remote, decoded, 0.0)
    if setup.relay is None:
        md, slots, adm = _md(setup, rate, full, c.weight * remote * md_share, stretch)
        return DecodeSide(md, slots, md.step_s * stretch, adm, full,
                          c.weight * remote * md_share, None, None)  # fmt: skip
    relay, local = path == rt.RELAY, path == rt.LOCAL
    rtt = setup.link.rtt_s if setup.link is not None else 0.0
    fixed = engine_fixed_s(setup)

    def handoff_of(load: DecodeLoad, wait_s: float, md_context: float):
        handed = c.weight * relay
        return lambda eager: handoff(
            setup.decode.instance, load.batch, load.step_s, eager, md_context, rtt, fixed,
            wait_s, handed * (np.asarray(eager) > 0),
        )  # fmt: skip

    context = context_tokens(c, c.output_tokens, c.weight * (relay | local))
    cap = count_cap(setup.relay, context)
    reserve = reserve_output_tokens(setup.scenario)

    def with_wait(md_ref: DecodeLoad, md_context: float, wait_s: float, near=None) -> _Settled:
        """RLD when a handed request waits `wait_s` for an MD slot, then MD with the
        tokens RLD leaves it (SaturatedError when MD cannot take them); `near`: a settled
        state whose RLD step starts RLD's passes (one pass, for the search's probes)."""
        rl = relay_load(
            setup.relay, c, relay, local, rate, wan_time_s,
            setup.deployment.policy.handoff == "catch_up",
            handoff_of(md_ref, wait_s, md_context), reserve, cap,
            None if near is None else near.rl.step_s,
        )  # fmt: skip
        tokens, md_weights = _md_share(c, relay, local, remote, full, rl, md_share)
        md, slots, adm = _md(setup, rate, tokens, md_weights, stretch)
        return _Settled(rl, tokens, md_weights, md, slots, adm,
                        context_tokens(c, tokens, md_weights))  # fmt: skip

    # a wait past the longest output's decode on RLD (at its slot limit's step) moves
    # nothing more to RLD: F is flat above it
    cap_s = min(
        float(np.max(c.output_tokens))
        * float(setup.relay.instance.decode_step_s(max(cap, 1), context)),
        SETTLE_WAIT_CAP_S,
    )
    s = _settle(setup, rate, full, c.weight * remote * md_share, stretch, with_wait, cap_s)
    h = (
        handoff_of(s.md, s.adm.wait.mean_s(), s.md_context)(s.rl.eager_tokens)
        if relay.any()
        else None
    )
    return DecodeSide(s.md, s.slots, s.md.step_s * stretch, s.adm, s.tokens, s.md_weights, s.rl, h)


def _md_share(c, relay, local, remote, full, rl: RelayLoad, md_share: float):
    """Per class: the tokens MD decodes per visit and the visits per request of the stream."""
    kept, over = rl.kept_frac, rl.blocked_frac  # per class
    # per class: the chance a request reaches MD and the tokens MD decodes when it does
    on_rld = np.where(relay, kept * (rl.rld_tokens < c.output_tokens), 0.0)
    visits = np.where(relay | local, on_rld + over, 1.0 * remote)
    md_mass = np.where(relay, on_rld * (c.output_tokens - rl.rld_tokens), 0.0)
    md_mass = md_mass + np.where(relay | local, over * c.output_tokens, full)
    tokens = np.divide(md_mass, visits, out=np.zeros(len(c)), where=visits > 0)
    return tokens, c.weight * visits * md_share


# ---- MD's slot wait as RLD sees it, settled ------------------------------------------------
# A handed request waits on RLD for an MD slot, decoding meanwhile (catch-up): the longer
# MD's wait w, the more tokens RLD takes and the fewer MD is left, so MD's own wait F(w)
# falls as w grows. The wait RLD is given must be the one MD then has: F(w) = w, one root
# since F - w strictly falls; found by bisection on log w. (Taking w from MD with every
# output on it, as before, overstated the wait near MD's capacity: RLD held requests for
# minutes, overflowed, and the closed form called MD saturated 11-20 % below the rate the
# simulator carried: the campaign's PDD goodput misses.)
SETTLE_WAIT_FLOOR_S = 1e-3  # waits below it change no relay hold measurably (RLD steps >= ms)
SETTLE_REL_TOL = 0.05  # the settled wait to 5 %
SETTLE_WAIT_CAP_S = 1e4  # under any output's decode: the bracket's top at most
SETTLE_PROBES = 40  # bisection from 1e-3 to 1e4 s to 5 % is 9; regula falsi a few more


@dataclass(frozen=True)
class _Settled:
    rl: RelayLoad
    tokens: np.ndarray
    md_weights: np.ndarray
    md: DecodeLoad
    slots: int
    adm: Admission
    md_context: float


def _settle(setup, rate, full, full_weights, stretch, with_wait, cap_s: float) -> _Settled:
    """RLD and MD at the wait where MD's slot wait equals the one RLD was given (see above);
    `with_wait(md_ref, md_context, wait_s, near)` -> _Settled (SaturatedError when MD
    cannot carry what RLD leaves it); `cap_s`: a wait above which F is flat.

    The root lies under MD's wait with every output on it (RLD only lowers it) and above
    F of any wait above it (F falls). Near MD's capacity F rises from nothing to saturation
    within a few per cent of w (Halfin-Whitt: n K slots wait only within about 1 / sqrt(n K)
    of full), so: bisection on log w while the bracket is wider than SETTLE_REL_TOL or its
    low end saturates MD, then regula falsi on phi(u) = log F(e^u) - u with the Illinois
    halving, until F and w agree to SETTLE_REL_TOL (that state is the answer). The probes
    run RLD's step fixed point one pass from the last accepted state (the first ran it
    from the slot limit), and MD's step and batch for the handoff are that state's. Out of
    probes, the answer is the accepted state (F at most w) with MD's mean wait set to w."""
    try:
        ref, _, adm = _md(setup, rate, full, full_weights, stretch)
        high = min(adm.wait.mean_s(), cap_s)
    except SaturatedError:  # with every output on MD; RLD may take enough of it
        ref, high = _slot_limit_load(setup, full, full_weights), cap_s
    top = with_wait(ref, context_tokens(setup.classes, full, full_weights), high)
    tol = math.log1p(SETTLE_REL_TOL)
    if high <= SETTLE_WAIT_FLOOR_S:
        return top  # no wait worth settling
    hi_phi = _phi(top, high)
    low, lo_phi, kept = max(SETTLE_WAIT_FLOOR_S, top.adm.wait.mean_s()), None, 0
    for _ in range(SETTLE_PROBES):
        if hi_phi >= -tol or high <= low * (1.0 + SETTLE_REL_TOL / 100):
            break  # consistent, or bracketed far below the tolerance
        u_lo, u_hi = math.log(low), math.log(high)
        if lo_phi is None or u_hi - u_lo > tol:
            u = (u_lo + u_hi) / 2
        else:
            u = u_hi - hi_phi * (u_hi - u_lo) / (hi_phi - lo_phi)
            u = min(max(u, u_lo + 0.01 * (u_hi - u_lo)), u_hi - 0.01 * (u_hi - u_lo))
        try:
            s = with_wait(top.md, top.md_context, math.exp(u), top)
        except SaturatedError:  # RLD takes too little at this wait: MD's wait is longer
            low, lo_phi, kept = math.exp(u), None, 0
            continue
        phi = _phi(s, math.exp(u))
        if abs(phi) <= tol:
            return s
        if phi > 0:
            low, lo_phi, kept = math.exp(u), phi, max(kept, 0) + 1
            if kept > 1:  # the same end kept twice: halve the other's weight (Illinois)
                hi_phi /= 2
        else:
            high, hi_phi, top, kept = math.exp(u), phi, s, min(kept, 0) - 1
            low = max(low, s.adm.wait.mean_s())
            if kept < -1 and lo_phi is not None:
                lo_phi /= 2
    if hi_phi >= -tol:
        return top
    # F jumps across the collapsed bracket (MD at the edge of its slots, where a hair of
    # RLD's hold moves its wait by seconds): the root's MD wait is the bracket's, so MD's
    # wait law keeps its chance of waiting and takes the mean RLD was given
    prob = top.adm.wait.prob_wait if top.adm.wait.prob_wait > 0 else 1.0
    adm = dataclasses.replace(top.adm, wait=WaitModel(prob, prob / high))
    return dataclasses.replace(top, adm=adm)


def _phi(s: _Settled, given_s: float) -> float:
    """log(MD's wait / the wait RLD was given), MD's wait floored like the bracket."""
    return math.log(max(s.adm.wait.mean_s(), SETTLE_WAIT_FLOOR_S / 2) / given_s)


def _slot_limit_load(setup: Setup, tokens: np.ndarray, weights: np.ndarray) -> DecodeLoad:
    """MD with every slot busy: the handoff's MD when its full load would saturate it."""
    slots, context = pool_slots(setup, setup.decode, tokens, weights)
    slots = max(slots, 1)
    step = float(setup.decode.instance.decode_step_s(slots, context))
    return DecodeLoad(float(slots), step, slots, 1.0)
