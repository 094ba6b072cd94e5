"""The decode side of a deployment at one arrival rate: the relay pool (RLD, by Little's
law with overflow), the decode role that finishes requests (MD, IDC-PD's decode or the
colocated instances) with its slots and admission wait, and the handoff between them.

MD's load depends on how many tokens RLD takes, and RLD's handoff on MD's step and slot
wait: MD is solved once with every output on it (the handoff's MD), then RLD, then MD
again with RLD's tokens removed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

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
    c = setup.classes
    share = float(weights.sum())
    mean_tokens = float(np.dot(weights, tokens)) / share if share else 0.0
    context = context_tokens(c, tokens, weights)
    reserve = reserved_tokens(
        c.input_tokens, c.output_tokens, reserve_output_tokens(setup.scenario)
    )
    slots = slots_per_instance(pool.instance, reserve, weights * tokens, count_cap(pool, context))
    load = decode_fixed_point(
        pool.instance, pool.group.count, rate * share, mean_tokens, context, what, slots
    )
    return load, slots


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
    md, slots, adm = _md(setup, rate, full, c.weight * remote * md_share, stretch)
    if setup.relay is None:
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
    rl = relay_load(
        setup.relay, c, relay, local, rate, wan_time_s,
        setup.deployment.policy.handoff == "catch_up",
        handoff_of(md, adm.wait.mean_s(), context_tokens(c, full, c.weight * remote)),
        reserve_output_tokens(setup.scenario),
        count_cap(setup.relay, context),
    )  # fmt: skip
    kept, over = rl.kept_frac, rl.blocked_frac  # per class
    # per class: the chance a request reaches MD and the tokens MD decodes when it does
    on_rld = np.where(relay, kept * (rl.rld_tokens < c.output_tokens), 0.0)
    visits = np.where(relay | local, on_rld + over, 1.0 * remote)
    md_mass = np.where(relay, on_rld * (c.output_tokens - rl.rld_tokens), 0.0)
    md_mass = md_mass + np.where(relay | local, over * c.output_tokens, full)
    tokens = np.divide(md_mass, visits, out=np.zeros(len(c)), where=visits > 0)
    md_weights = c.weight * visits * md_share
    md, slots, adm = _md(setup, rate, tokens, md_weights, stretch)
    md_context = context_tokens(c, tokens, md_weights)
    h = handoff_of(md, adm.wait.mean_s(), md_context)(rl.eager_tokens) if relay.any() else None
    return DecodeSide(md, slots, md.step_s * stretch, adm, tokens, md_weights, rl, h)
