"""Necessary conditions on a plan, read off `evaluate`'s own model: for each candidate,
the fewest instances any plan meeting the SLA at a rate must have (`min_count`), the most
rate n instances could carry (`max_rate`), and the rate at which a line saturates.

Every bound here is a proof that less cannot work, whatever the other roles are, so the
exact search (search.py) may skip what lies beyond it. Each rests on a step of `snapshot`:

- prefill (and colocated): the G/G/c queue saturates unless `rate x E[service] < n`; and
  every request's TTFT is its prefill wait plus its prefill time plus terms >= 0 (the WAN,
  a connection wait, the first decode step), so the TTFT percentiles of `service + wait`
  alone are lower bounds of the real ones.
- decode pools: the batch B of an instance solves `B = (tokens/s per instance) x step(B)`
  below the batch that fits HBM, so an instance carries at most `sup B/step(B)` tokens/s
  (taken on a grid, using only that a step never gets shorter as the batch or the
  context grows). Where every multi-token request's TPOT is the pool's step (IDC-PD,
  CDC-PD, colocated, where prefill also slows the step), or where the requests that
  decode wholly on main decode outweigh a percentile's tail (PDD; their tokens and the
  least mean context any split of the relayed tokens gives), that step must also be
  within the TPOT limit, which caps B further.
- PDD's main decode, also (first_pass.py): `decode_side` first solves MD with every remote
  request's whole output on it, before RLD takes its eager tokens, so n instances carry at
  most n K / step(K) / T requests/s (K its slots, T remote output tokens per request), the
  rate above which that pass saturates (exact, to SATURATION_SLACK). It only caps the
  ceiling (`CeilingOnly`): the fewest instances stay the TPOT bound's, so the walk's
  order, which decides ties between plans of equal cost, does not move.
- WAN: the line saturates unless its goodput exceeds the mean bits/s crossing it.
Relay decode gets no bound but one instance (its tokens depend on the WAN and the handoff).
Margins (TTFT_MARGIN_S, TPOT_MARGIN_S, FIXED_POINT_SLACK) keep the root-finding tolerances
of evaluate on the safe side: a bound may be a little weak, never too strong.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from pdd_plan.errors import SaturatedError
from pdd_plan.model import routing as rt
from pdd_plan.model.compute.roofline import Instance
from pdd_plan.model.queueing.latency_mixture import LatencyGroup, grouped_quantiles_s
from pdd_plan.model.queueing.prefill_batch import (
    batching_applies,
    budget_tokens,
    prefill_capacity_rps,
    prefill_mix,
    prefill_queue,
)
from pdd_plan.model.queueing.queueing import ggc_wait
from pdd_plan.model.scenario import Scenario
from pdd_plan.model.workload.workload import RequestClasses
from pdd_plan.plan.first_pass import first_pass
from pdd_plan.plan.sup_rate import SupRate, smallest

TTFT_MARGIN_S = 1e-5  # evaluate's quantiles are roots found to about 1e-6 s
TPOT_MARGIN_S = 1e-5
# decode_fixed_point brackets its root twice on 64-point grids and interpolates: the batch
# it reports is within max_batch / 63^2 of the root
FIXED_POINT_SLACK = 1.5 / 63**2
# the first pass's saturation test sums the same floats in another order (about 1e-15
# apart): its ceiling is taken this much higher, so it never refuses a plan the model runs
SATURATION_SLACK = 1e-9
GRID_CELLS = 1024


def throughput_bound(inst: Instance, context: float, step_limit_s: float | None) -> float:
    """An upper bound on the decode tokens/s one instance carries at mean context
    `context` with its step within `step_limit_s` (None: only HBM limits the batch)."""
    max_batch = inst.max_batch(context)
    if max_batch < 1:
        return 0.0
    top = float(max_batch)
    if step_limit_s is not None:
        if float(inst.decode_step_s(1.0, context)) > step_limit_s:
            return 0.0
        low, high = 1.0, top
        for _ in range(2):  # bracket the largest batch within the limit, twice
            grid = np.linspace(low, high, GRID_CELLS + 1)
            within = np.asarray(inst.decode_step_s(grid, context), dtype=float) <= step_limit_s
            last = int(np.flatnonzero(within)[-1])
            if last == GRID_CELLS:
                break
            low, high = grid[last], grid[last + 1]
        else:
            top = min(top, high + FIXED_POINT_SLACK * max_batch)
    grid = np.linspace(0.0, top, GRID_CELLS + 1)
    steps = np.asarray(inst.decode_step_s(np.maximum(grid[:-1], 1e-6), context), dtype=float)
    return float(np.max(grid[1:] / steps))


class RoleBound:
    """What any plan meeting the SLA asks of one candidate: `min_count(rate)`, the fewest
    instances at a rate, and `max_rate(n)`, the most n instances could carry."""

    def min_count(self, rate: float) -> int | None:
        return 1

    def max_rate(self, n: int) -> float:
        return math.inf

    def max_rate_at_most(self, n: int, rate: float, strict: bool = False) -> bool:
        """max_rate(n) <= rate (`strict`: < rate), without its full bisection where the
        bound bisects (PrefillBound)."""
        most = self.max_rate(n)
        return most < rate or (not strict and most == rate)

    def sizing(self) -> RoleBound:
        """The bound without CeilingOnly's cap (itself for any other)."""
        return self


class DecodeBound(RoleBound):
    """A decode pool that decodes at least `tokens` tokens per request of the stream, at
    a mean context of at least `context`, with its step within `step_limit_s`."""

    def __init__(self, inst: Instance, tokens: float, context: float, step_limit_s):
        self.inst, self.tokens, self.context, self.limit = inst, tokens, context, step_limit_s
        self._theta = None

    def theta(self) -> float:
        if self._theta is None:
            self._theta = throughput_bound(self.inst, self.context, self.limit)
        return self._theta

    def _hopeless(self) -> bool:
        if self.tokens > 0:
            return self.theta() <= 0
        one = self.inst.decode_step_s(1.0, self.context)
        return self.limit is not None and one > self.limit

    def min_count(self, rate: float) -> int | None:
        if self._hopeless():
            return None
        if self.tokens <= 0:
            return 1
        return max(1, math.ceil(rate * self.tokens / self.theta() * (1 - 1e-9)))

    def max_rate(self, n: int) -> float:
        if self._hopeless():
            return 0.0
        return math.inf if self.tokens <= 0 else n * self.theta() / self.tokens


class FirstPassBound(RoleBound):
    """PDD's main decode carries every remote output in `decode_side`'s first pass
    (first_pass.py): n instances, at most n K / step(K) / T requests/s. Computed when
    first asked (space.py asks every candidate at the least rate at once)."""

    def __init__(self, inst: Instance, c: RequestClasses, routes, scenario: Scenario):
        self._args, self._per_instance = (inst, c, routes, scenario), None

    def per_instance_rps(self) -> float:
        """The most requests/s one instance carries (with the slack: never too strong)."""
        if self._per_instance is None:
            fp = first_pass(*self._args)
            if fp.tokens_per_request <= 0:
                self._per_instance = math.inf
            else:
                carried = fp.tokens_per_s / fp.tokens_per_request
                self._per_instance = carried * (1 + SATURATION_SLACK)
        return self._per_instance

    def min_count(self, rate: float) -> int | None:
        per = self.per_instance_rps()
        if per <= 0:
            return None  # no request fits: saturated at any rate
        return 1 if math.isinf(per) else max(1, math.ceil(rate / per))

    def max_rate(self, n: int) -> float:
        return n * self.per_instance_rps()


class CeilingOnly(RoleBound):
    """`sizing` with `ceiling`'s max_rate as a further cap: min_count stays `sizing`'s, so
    where each group of the walk starts, and with it the order in which plans of equal
    cost are met (which decides ties), is what it was without `ceiling`; the ceiling only
    skips plans that fail, before any evaluation or corner test. A winner's goodput
    bisection starts from `sizing()`'s ceiling (search.py), so its steps, and the values
    that decide between near-equal plans, do not move either."""

    def __init__(self, sizing: RoleBound, ceiling: RoleBound):
        self._sizing, self.ceiling = sizing, ceiling

    def sizing(self) -> RoleBound:
        return self._sizing

    def min_count(self, rate: float) -> int | None:
        return self._sizing.min_count(rate)

    def max_rate(self, n: int) -> float:
        return min(self._sizing.max_rate(n), self.ceiling.max_rate(n))

    def max_rate_at_most(self, n: int, rate: float, strict: bool = False) -> bool:
        return any(b.max_rate_at_most(n, rate, strict) for b in (self._sizing, self.ceiling))


class PrefillBound(RoleBound):
    """The prefill queue (G/G/c) must not saturate, and TTFT >= prefill wait + time.
    `decode` (colocated): the same instances also decode, their steps slowed by the share
    of time prefill takes, and every TPOT is that step."""

    def __init__(self, inst, c: RequestClasses, scenario: Scenario, decode=None):
        self.inst, self.c, self.decode = inst, c, decode
        service = np.asarray(inst.prefill_time_s(c.uncached_tokens, c.cached_tokens), float)
        self.service, self.mean = service, c.mean(service)
        self.cv2 = c.mean((service - self.mean) ** 2) / self.mean**2 if self.mean > 0 else 0.0
        self.cv2_a = scenario.workload.burstiness_cv2
        self.limits = scenario.sla.ttft_s
        self._rates: dict[int, SupRate] = {}  # n -> max_rate(n)'s bisection, as far as asked
        # rate -> min_count(rate): every routing policy's space asks the same candidate at the
        # same least rate (the bound does not depend on the policy), issue #15
        self._counts: dict[float, int | None] = {}

    def _within(self, waits) -> bool:
        got = grouped_quantiles_s(
            [p / 100 for p in self.limits], [LatencyGroup(self.c.weight, self.service, waits)]
        )
        return all(
            g <= lim + TTFT_MARGIN_S for g, lim in zip(got, self.limits.values(), strict=True)
        )

    def ok(self, n: int, rate: float) -> bool:
        if rate * self.mean >= n:
            return False
        if not self._within((ggc_wait(rate, self.mean, n, self.cv2_a, self.cv2),)):
            return False
        d = self.decode
        if d is None or d.tokens <= 0:
            return True
        limit = None if d.limit is None else d.limit * (1 - rate * self.mean / n)
        return rate * d.tokens / n <= throughput_bound(self.inst, d.context, limit)

    def min_count(self, rate: float) -> int | None:
        if rate not in self._counts:
            self._counts[rate] = self._fewest(rate)
        return self._counts[rate]

    def _fewest(self, rate: float) -> int | None:
        if not self._within(()):
            return None  # the prefill time alone misses the TTFT limit
        if self.decode is not None and self.decode.min_count(rate) is None:
            return None
        return smallest(lambda n: self.ok(n, rate), int(math.floor(rate * self.mean)) + 1)

    def _top_rate(self, n: int) -> float:
        """Where max_rate(n)'s bisection starts: the rate at which the queue saturates."""
        return n / self.mean if self.mean > 0 else 1e9

    def _sup(self, n: int) -> SupRate:
        if n not in self._rates:
            if not self._within(()):
                self._rates[n] = SupRate(lambda r: False, 0.0)  # max_rate 0, no step taken
            else:
                self._rates[n] = SupRate(lambda r: self.ok(n, r), self._top_rate(n))
        return self._rates[n]

    def max_rate(self, n: int) -> float:
        return self._sup(n).value()

    def max_rate_at_most(self, n: int, rate: float, strict: bool = False) -> bool:
        return self._sup(n).at_most(rate, strict)


class BatchedPrefillBound(PrefillBound):
    """The batched prefill pool (model/queueing/prefill_batch.py): it must not saturate at full
    steps, and TTFT >= its wait + each class's own steps at that rate (evaluate's model)."""

    def __init__(self, inst, c: RequestClasses, scenario: Scenario, arch: str):
        budget = scenario.engine.prefill_token_budget_per_gpu
        self.queue = lambda n, rate: prefill_queue(
            inst, c, n, rate, scenario.workload.burstiness_cv2, budget, arch
        )
        self.capacity_rps = prefill_capacity_rps(inst, c, budget, arch)
        super().__init__(inst, c, scenario)
        mix = prefill_mix(inst, c, budget_tokens(inst, budget))
        self.service = mix.own_s(mix.mean_chunk_tokens)  # one chunk per step: the least

    def ok(self, n: int, rate: float) -> bool:
        if rate >= n * self.capacity_rps:
            return False
        try:
            service, wait, _ = self.queue(n, rate)
        except SaturatedError:
            return False
        got = grouped_quantiles_s(
            [p / 100 for p in self.limits], [LatencyGroup(self.c.weight, service, (wait,))]
        )
        return all(
            g <= lim + TTFT_MARGIN_S for g, lim in zip(got, self.limits.values(), strict=True)
        )

    def _fewest(self, rate: float) -> int | None:
        if not self._within(()):
            return None  # the prefill time alone misses the TTFT limit
        return smallest(lambda n: self.ok(n, rate), int(math.floor(rate / self.capacity_rps)) + 1)

    def _top_rate(self, n: int) -> float:
        return n * self.capacity_rps if math.isfinite(self.capacity_rps) else 1e9


def _tpot_limit(scenario: Scenario) -> float | None:
    limits = scenario.sla.tpot_s.values()
    return min(limits) + TPOT_MARGIN_S if limits else None


def _context(c: RequestClasses) -> np.ndarray:
    return c.input_tokens + c.output_tokens / 2


def _whole_output(inst, c: RequestClasses, scenario: Scenario) -> DecodeBound:
    """A pool that decodes every request's output, where every multi-token request's TPOT
    is the pool's step (IDC-PD's decode, CDC-PD's main decode, colocated)."""
    w, out, ctx = c.weight, c.output_tokens, _context(c)
    tokens = float(np.dot(w, out))
    context = max(float(np.dot(w * out, ctx)) / tokens, 1.0) if tokens else 1.0
    limit = _tpot_limit(scenario) if np.any(out > 1) else None
    return DecodeBound(inst, tokens, context, limit)


def _main_decode_pdd(inst, c, routes, scenario) -> DecodeBound:
    """PDD's main decode: at least the tokens of the requests that skip the relay, at a
    mean context no lower than the least any split of the relayed tokens could give; its
    step is the TPOT of those requests, binding where they outweigh a percentile's tail."""
    direct = routes.path == rt.DIRECT
    relay = routes.path == rt.RELAY
    ctx, w, out = _context(c), c.weight, c.output_tokens
    tokens = float(np.dot(w[direct], out[direct]))
    if tokens <= 0:
        return DecodeBound(inst, 0.0, 1.0, None)
    mass, moment = tokens, float(np.dot(w[direct] * out[direct], ctx[direct]))
    for k in np.flatnonzero(relay)[np.argsort(ctx[relay], kind="stable")]:
        if ctx[k] >= moment / mass:
            break
        mass, moment = mass + w[k] * out[k], moment + w[k] * out[k] * ctx[k]
    multi = out > 1
    limit = None
    if multi.any():
        direct_share = float(w[direct & multi].sum() / w[multi].sum())
        tail = [lim for p, lim in scenario.sla.tpot_s.items() if direct_share > 1 - p / 100 + 1e-9]
        limit = min(tail) + TPOT_MARGIN_S if tail else None
    return DecodeBound(inst, tokens, max(moment / mass, 1.0), limit)


def role_bound(arch: str, role: str, inst: Instance, c: RequestClasses, routes, scenario):
    """The necessary conditions on `role`'s instances of `inst` (module doc)."""
    if role == "prefill" and batching_applies(scenario.engine.prefill_token_budget_per_gpu, arch):
        return BatchedPrefillBound(inst, c, scenario, arch)
    if role == "prefill":
        return PrefillBound(inst, c, scenario)
    if role == "colocated":
        return PrefillBound(inst, c, scenario, _whole_output(inst, c, scenario))
    if role == "relay_decode":
        return RoleBound()
    if arch == "pdd":  # the direct requests' TPOT, and the first pass's saturation
        return CeilingOnly(
            _main_decode_pdd(inst, c, routes, scenario),
            FirstPassBound(inst, c, routes, scenario),
        )
    return _whole_output(inst, c, scenario)


def wan_bits_per_request(arch: str, c: RequestClasses, routes) -> float:
    """Mean bits per request that cross the WAN (evaluate's `_wan` crossing rule): the line
    saturates at rates where rate x this reaches its goodput."""
    crossing = routes.path != rt.LOCAL if arch != "pdd" else routes.wan_payload_bytes > 0
    return float(np.dot(c.weight[crossing], routes.wan_payload_bytes[crossing])) * 8


@dataclass
class Ceiling:
    """The least of a line's saturation rate and bounds' max_rate(n) (`terms`: (bound, n)),
    compared with a rate without finishing a bound's bisection where the comparison is
    settled before (bounds.SupRate): the least is at most a rate iff one of them is."""

    line_rps: float
    terms: list

    def at_most(self, rate: float, strict: bool = False) -> bool:
        """value() <= rate (`strict`: value() < rate)."""
        if self.line_rps < rate or (not strict and self.line_rps == rate):
            return True
        # the bounds that do not bisect first: they settle it at no cost when they can
        terms = sorted(self.terms, key=lambda t: isinstance(t[0], PrefillBound))
        return any(b.max_rate_at_most(n, rate, strict) for b, n in terms)

    def value(self) -> float:
        return min([self.line_rps, *(b.max_rate(n) for b, n in self.terms)])
