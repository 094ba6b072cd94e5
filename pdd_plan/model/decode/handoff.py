"""The extend-decode handoff from RLD to MD as named parts (pdd-system.md §5).

Once MD holds a relayed request's KV:
- message_s: the token ids cross the line; MD's "KV here" reaches RLD and RLD's ids come
  back: one round trip;
- engine_fixed_s: what the engine spends per handoff outside the decode step (building
  the extend batch, the step outside the captured CUDA graph, bookkeeping): a scenario
  knob, by default derived from the published recompute handoff (below);
- slot_wait_s: the wait for a free MD slot (MD's admission queue);
- boundary_wait_s: the wait for MD's next step boundary (half a step on average);
- extend_s: the extend-decode step that rebuilds the eager tokens' KV and emits the next.

One-shot: RLD stops when MD has the KV; the user sees no token for the whole handoff
(its visible gap). Catch-up: RLD keeps generating through it and streams its ids; MD
absorbs them in rounds until it has caught up (below); RLD decodes one more token per RLD
step until the stop reaches it, and the user sees no gap.

The published figure: recompute handoff of a 100-token sequence 289.5 / 305.2 / 321.4 ms
(min / mean / max, standard deviation 4.8 ms: no queueing in it), measured on the paper's
deployment, 30 ms RTT, H200 x 16 MD. Less one round trip (30 ms), half an idle MD step
(9.7 ms) and the roofline's extend step of 100 tokens at batch 1 (29.9 ms) leaves 235.6 ms
of fixed engine cost. tests/unit/test_handoff.py re-derives it from the roofline.
Bias: the fixed cost is taken to delay the handed-off request only; an engine that runs
the extend step outside its graph for the whole batch would slow the co-batched requests
too (not modelled).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

PUBLISHED_RECOMPUTE_HANDOFF_S = 0.3052  # pdd-system.md §5, mean of 100-token handoffs
PUBLISHED_HANDOFF_TOKENS = 100
PUBLISHED_HANDOFF_RTT_S = 0.030  # the paper's line (scenarios/pdd-paper.yaml)
DEFAULT_ENGINE_FIXED_S = 0.2356
DEFAULT_ENGINE_FIXED_SOURCE = (
    "derived from the 305.2 ms recompute handoff of 100 tokens published in the PDD technical "
    "report (Infinigence, WAIC 2026) "
    "less one RTT, half an MD step and the roofline's extend step"
)


@dataclass(frozen=True)
class Handoff:
    """Per request class (arrays) or one request (floats): the parts, in seconds."""

    message_s: float
    engine_fixed_s: float
    slot_wait_s: float
    boundary_wait_s: float
    extend_s: np.ndarray
    one_way_s: float = 0.0  # a token id's trip RLD -> MD, or the stop's MD -> RLD: RTT / 2
    absorb_step_s: float = 0.0  # MD's step absorbing one streamed id beyond its own token
    # per class, the requests handed off (the mean handoff's weights); None: equal
    weights: np.ndarray | None = None

    @property
    def total_s(self) -> np.ndarray:
        """Handoff latency: MD holds the KV -> MD emits its next token."""
        fixed = self.message_s + self.engine_fixed_s + self.slot_wait_s + self.boundary_wait_s
        return fixed + np.asarray(self.extend_s, float)

    @property
    def mean_extend_s(self) -> float:
        """The extend step of the handoffs that happen (weighted by the requests handed)."""
        ext = np.asarray(self.extend_s, float)
        if not ext.size:
            return 0.0
        w = self.weights
        if w is None or ext.size != np.size(w) or not np.sum(w) > 0:
            return float(np.mean(ext))
        return float(np.average(ext, weights=w))

    @property
    def mean_total_s(self) -> float:
        fixed = self.message_s + self.engine_fixed_s + self.slot_wait_s + self.boundary_wait_s
        return fixed + self.mean_extend_s

    def parts(self) -> dict[str, float]:
        """Mean of each part (for reports)."""
        return {
            "message_s": self.message_s,
            "engine_fixed_s": self.engine_fixed_s,
            "slot_wait_s": self.slot_wait_s,
            "boundary_wait_s": self.boundary_wait_s,
            "extend_s": self.mean_extend_s,
        }


_EXTEND_GRID_POINTS = 24


def handoff(
    md_instance,
    md_batch: float,
    md_step_s: float,
    eager_tokens: np.ndarray,
    md_context_tokens: float,
    rtt_s: float,
    engine_fixed_s: float,
    slot_wait_s: float,
    weights: np.ndarray | None = None,
) -> Handoff:
    """The handoff of each class's `eager_tokens` to an MD running `md_batch` requests at
    a mean context of `md_context_tokens`; `weights`: the requests handed, per class.

    The extend step is MD's step at its batch and mean context that also processes the
    handed tokens over that context (as the simulator runs it): tabulated over the handed
    tokens (log grid) and interpolated, one roofline call per snapshot."""
    eager = np.maximum(np.asarray(eager_tokens, float), 1.0)
    grid = np.unique(
        np.geomspace(1.0, max(float(eager.max(initial=1.0)), 2.0), _EXTEND_GRID_POINTS)
    )
    b, ctx = max(md_batch, 1.0), max(float(md_context_tokens), 1.0)
    table = np.asarray(md_instance.extend_decode_s(b, grid, ctx), float)
    extend = np.interp(eager, grid, table)
    # catch-up's absorbing step: MD's step plus the cost of one more token in it
    one_more = float(
        md_instance.extend_decode_s(b, 1.0, ctx) - md_instance.extend_decode_s(b, 0.0, ctx)
    )
    return Handoff(rtt_s, engine_fixed_s, slot_wait_s, md_step_s / 2, extend, rtt_s / 2,
                   md_step_s + one_more, weights)  # fmt: skip


# ---- catch-up as the published protocol (pdd-system.md §5, "Handoff modes") -------------
# RLD streams each new token id to MD (one way: RTT/2). MD's first extend step absorbs the
# ids that reached it by its start (the handoff above); each following MD step absorbs,
# co-batched with its decode, the ids that arrived during the previous one. MD has caught
# up when no id beyond the one it emits itself arrived during its last step, or when no
# fewer arrived than during the step before: the lag is then the stream's own (one way +
# one MD step), which more rounds cannot shorten (MD's steps are as long as, or longer
# than, RLD's). MD then tells RLD to stop; RLD hears it one way later and leaves at its
# next step boundary. RLD's tokens past MD's position are RLD output that MD recomputes:
# we count them as RLD output (RLD spent the steps); the user takes each position's first
# copy (RLD's), then MD's tokens after RLD's last, so nothing is shown twice and the user
# waits, at the switch, for MD to emit the positions RLD ran ahead by.

MAX_CATCH_UP_STEPS = 64  # a bound on the loop only: the rule above stops it in a few


def caught_up(new_tokens, previous_new_tokens):
    """`new_tokens`: ids that reached MD during its last step beyond those it holds (its
    own next token among them); `previous_new_tokens`: the same for the step before."""
    new = np.asarray(new_tokens)
    return (new <= 1) | (new >= np.asarray(previous_new_tokens))


@dataclass(frozen=True)
class CatchUp:
    md_steps: int  # MD steps from its join to caught up: the extend + the absorbing ones
    md_position_tokens: int  # RLD tokens MD holds when caught up
    stop_s: float  # when RLD hears the stop


def run_catch_up(extend_start_s: float, first_tokens: int, rld_tokens_by, md_step_s,
                 one_way_s: float, output_tokens: int) -> CatchUp:  # fmt: skip
    """The rounds on given step grids (the simulator's own): `rld_tokens_by(t)` RLD's
    tokens emitted by time t; `md_step_s(k)` MD's step that absorbs k ids beyond its own
    token (the first: the extend of the `first_tokens` ids that reached MD by
    `extend_start_s`)."""
    position, steps, previous = first_tokens, 1, first_tokens + 1
    end_s = extend_start_s + md_step_s(first_tokens)
    while steps < MAX_CATCH_UP_STEPS:
        arrived = min(rld_tokens_by(end_s - one_way_s), output_tokens)
        new = arrived - position
        if arrived >= output_tokens or caught_up(new, previous):
            break
        end_s += md_step_s(new - 1)  # MD's own next token is not an extra
        position, steps, previous = arrived, steps + 1, new
    return CatchUp(steps, position, end_s + one_way_s)


CLOSED_FORM_PHASES = 16  # RLD phases the closed form runs the rounds at (equally likely)
SWITCH_ROWS = 4  # values of the switch gap the TPOT rows take (divides the phases)


def _rounds_at_phases(h: Handoff, rld_step_s: float):
    """The rounds at CLOSED_FORM_PHASES phases of RLD's step grid against MD's mean steps
    (the mean extend, then the absorbing step): (CatchUp, RLD's grid phase) each."""
    ext, tau, r = h.mean_extend_s, h.one_way_s, rld_step_s
    start = h.mean_total_s - ext
    out = []
    for phase in (np.arange(CLOSED_FORM_PHASES) + 0.5) / CLOSED_FORM_PHASES * r:

        def by(t: float, phase: float = phase) -> int:
            return 0 if t < phase else int(np.floor((t - phase) / r + 1e-9)) + 1

        md_steps = itertools.chain([ext], itertools.repeat(h.absorb_step_s))
        rounds = run_catch_up(start, by(start - tau), by, lambda _k, s=md_steps: next(s), tau,
                              10**9)  # fmt: skip
        out.append((rounds, phase, by))
    return out


def catch_up_stop_s(h: Handoff, rld_step_s: float) -> np.ndarray:
    """Expected time from the handoff's start until RLD hears the stop, per class: the
    handoff (its first extend is MD's first round), then the absorbing rounds and the
    stop's one-way trip, averaged over RLD's phase (the rounds run once, at the mean
    extend step)."""
    end = h.mean_total_s
    after = np.mean([cu.stop_s - end for cu, _, _ in _rounds_at_phases(h, rld_step_s)])
    return np.asarray(h.total_s, float) + after


def catch_up_extra_tokens(h: Handoff, rld_step_s: float) -> np.ndarray:
    """Catch-up: RLD's tokens beyond one-shot's (which stops at the handoff's start): one
    per RLD step until the stop reaches it (expected over RLD's phase, so no rounding)."""
    return catch_up_stop_s(h, rld_step_s) / rld_step_s


def catch_up_switch_gaps_s(h: Handoff, rld_step_s: float) -> np.ndarray:
    """The user's wait from RLD's last token to MD's next, over RLD's phase (SWITCH_ROWS
    equally likely values): RLD leaves at its first boundary after the stop; MD emits its
    position + 1 when caught up, then one token a step (its step: twice the mean boundary
    wait) until the position after RLD's last; at least one MD step."""
    md_step, gaps = 2.0 * h.boundary_wait_s, []
    for cu, phase, by in _rounds_at_phases(h, rld_step_s):
        last = by(cu.stop_s - 1e-12) + 1  # RLD's token at its first boundary after the stop
        last_s = phase + (last - 1) * rld_step_s
        md_s = cu.stop_s - h.one_way_s + (last - cu.md_position_tokens) * md_step
        gaps.append(max(md_s - last_s, md_step))
    # SWITCH_ROWS equally likely values (the means of the sorted phases' quantile groups):
    # every value is a row of the TPOT root-finding, so fewer than the phases
    return np.sort(gaps).reshape(SWITCH_ROWS, -1).mean(axis=1)
