"""The exact search behind `solve`: plans in order of cost, each checked with `evaluate`.

A plan is a routing policy, one (datacenter, GPU, instance shape) and a count per role, and
lines per tier (space.py). The walk goes in increasing cost, so the first plan meeting the
SLA at the demand is the cheapest, and for ratios every plan that could still beat the best
is checked before it stops (`Goal`). It is kept short by proofs, not guesses: bounds.py's
per-candidate floors and ceilings, monotonicity (more instances or line never break an SLA
that held: a group failing at its corner fails whole), the goal's cost limit, and the
utilisation cap asked before the SLA once per plan (`_capped` sizes prefill by it). The
whole argument, with where each proof lives: docs/optimiser.md, "Why the search is exact".
"""

from __future__ import annotations

import heapq
import itertools
import math
import time
from dataclasses import dataclass, field

from pdd_plan.model.deployment import Deployment
from pdd_plan.model.evaluate import deployment_cost_usd_per_hour, meets_sla, prepare
from pdd_plan.model.placement import placement_problem
from pdd_plan.model.workload.workload import request_classes
from pdd_plan.plan.bounds import Ceiling
from pdd_plan.plan.capacity_ceiling import refuse_beyond_capacity
from pdd_plan.plan.ceilings import line_within_cap
from pdd_plan.plan.goal import (  # noqa: F401 (the names also read from here)
    BCR_HEADROOM,
    GOODPUT_HEADROOM,
    IMPROVE_REL_TOL,
    Goal,
    Outcome,
)
from pdd_plan.plan.prune import RECHECK_REL, Pruning, box_successors, instance_groups  # noqa: F401
from pdd_plan.plan.role_cap import fewest_within_cap, roles_within_cap
from pdd_plan.plan.space import Space, Spaces

GOODPUT_REL_TOL = 1e-3  # bisection precision of a winner's goodput
MAX_EVALUATIONS = 20_000
MAX_STEPS = 2_000_000  # heap pops
STOP_TIME = "time limit"
STOP_EVALUATIONS = "evaluation cap"
STOP_STEPS = "step cap"


LINE_ABOVE_CAP = 0.0  # an entry's `fails` when its line runs above the cap: no rate is met


@dataclass
class _Entry:
    setups: list | None = None
    passes: float = 0.0  # highest rate known to meet the SLA
    fails: float = math.inf  # lowest rate known to miss it
    roles_within_cap: bool | None = None  # every GPU role within the cap at the floor rate
    missed: dict = field(default_factory=dict)  # setup index -> lowest rate its SLA missed


@dataclass
class Search(Pruning):
    scenario: object
    model: object
    gpus: dict
    tiers: dict
    arch: str
    policies: list
    resolution: tuple
    deadline: float = math.inf
    max_evaluations: int = MAX_EVALUATIONS
    # a dead row's bigger lines are not queued (False: queued and skipped when met, as the
    # walk did before issue #15; the same plans are evaluated in the same order)
    prune_dead_lines: bool = True
    # refuse (capacity_ceiling.CapacityError) a rate some role's GPUs could never carry,
    # before any count is bounded (solve asks for it; a walk alone finds no plan instead)
    refuse_beyond_ceiling: bool = False
    evaluations: int = 0
    goal: Goal = field(init=False)
    spaces: list[Space] = field(init=False)
    _cache: dict = field(init=False, default_factory=dict)
    # ruled out by monotonicity; stays true as the threshold rates only rise
    _dead_groups: set = field(init=False, default_factory=set)
    _base: dict = field(init=False, default_factory=dict)  # (space, picks) -> least counts
    _dead_rows: set = field(init=False, default_factory=set)
    # group or row -> (rate its corner last passed at, corner tests so far)
    _tried: dict = field(init=False, default_factory=dict)
    _counts: dict = field(init=False, default_factory=dict)  # id(bound) -> rate -> min_count
    _cap_counts: dict = field(init=False, default_factory=dict)  # (id(bound), n) -> fewest
    # (space, line, RTT) -> pool ceiling; space -> its routes per hit-rate distribution
    _pools: dict = field(init=False, default_factory=dict)

    def __post_init__(self):
        s, w = self.scenario, self.scenario.workload
        self.dists = (w.prefix_hit_rate, *w.hit_rate_alternatives.values())
        self._misses = [0] * len(self.dists)  # per distribution: plans found to miss under it
        classes = [
            request_classes(w.input_tokens, w.output_tokens, d, self.resolution) for d in self.dists
        ]
        self.goal = Goal.of(s)
        self.plans = Spaces(
            s, self.model, self.gpus, self.tiers, self.arch, classes, self.goal.floor_rps
        )
        # set-up counts against the time limit: bounding candidates raises OutOfTime past it
        self.plans.deadline = self.deadline
        self.roles = self.plans.roles
        if self.refuse_beyond_ceiling:  # bounding 1e5-instance counts took seconds (#22)
            refuse_beyond_capacity(self.plans, self.policies, self.goal)
        self.spaces = [self.plans.space(p) for p in self.policies]
        self.deployment = self.plans.deployment
        self._allowed = self.plans.allowed
        # the line is planned under the same utilisation cap as every GPU role: line
        # options that would run above it at the least rate are no options
        self._cap_frac = s.policy.utilization_cap_frac
        floor = self.goal.floor_rps * (1 - 1e-9)
        for sp in self.spaces:
            sp.lines = tuple(o for o in sp.lines if o.max_rate_rps * self._cap_frac >= floor)

    def _entry(self, d: Deployment, rate: float) -> _Entry | None:
        """`d`'s cache entry, its setups prepared; None when the entry already settles
        `rate` (at or below a rate met, at or above one missed)."""
        key = (d.policy, d.instances, d.line_capacity_bits_per_s)
        e = self._cache.setdefault(key, _Entry())
        if rate <= e.passes or rate >= e.fails:
            return None
        if e.setups is None:
            self._prepare(e, d)
        return None if e.fails == LINE_ABOVE_CAP else e

    def _prepare(self, e: _Entry, d: Deployment) -> None:
        e.setups = [
            prepare(self.scenario, d, self.model, self.gpus, self.tiers, self.resolution, h)
            for h in self.dists
        ]
        # the line is planned under the utilisation cap at the rate every plan must
        # carry, as the MILP plans its GPU roles (issue #14: a plan was chosen at 92 %
        # line load, then warned about); no rate is met without it
        floor, cap = self.goal.floor_rps, self._cap_frac
        if not all(line_within_cap(x, floor, cap) for x in e.setups):
            e.fails = LINE_ABOVE_CAP

    def _missed(self, e: _Entry, dist: int, rate: float) -> None:
        e.missed[dist] = min(e.missed.get(dist, math.inf), rate)
        e.fails = rate  # missed under one distribution: missed
        self._misses[dist] += 1

    def meets(self, d: Deployment, rate: float) -> bool:
        """Whether `d` meets the SLA at `rate` under every hit-rate distribution, and runs
        its line and every GPU role within the utilisation cap at the floor rate."""
        return self._roles_within_cap(d) and self._meets_sla(d, rate)

    def _roles_within_cap(self, d: Deployment) -> bool:
        """Every GPU role of `d` within the cap at the floor rate under every hit-rate
        distribution (role_cap.py), once per plan. Asked first: the loads alone cost less
        than the SLA's percentiles, and near the edge most plans the walk meets are refused
        by the cap (default at 150 req/s: 234 of 236). The cap never enters
        `passes`/`fails`, which stay the SLA's (corners, goodput bisection and `known` read
        them as such); a line above the cap refuses the plan without the roles' loads."""
        e = self._cache.setdefault((d.policy, d.instances, d.line_capacity_bits_per_s), _Entry())
        if e.roles_within_cap is None:
            if e.setups is None:
                self._prepare(e, d)
            if e.fails == LINE_ABOVE_CAP:
                return False
            floor, cap = self.goal.floor_rps, self._cap_frac
            e.roles_within_cap = all(roles_within_cap(x, floor, cap) for x in e.setups)
        return e.roles_within_cap

    def _meets_sla(self, d: Deployment, rate: float) -> bool:
        """Whether `d` meets the SLA at `rate` under every hit-rate distribution (and its
        line the cap: an entry whose line is above it meets no rate)."""
        e = self._entry(d, rate)
        if e is None:
            return rate <= self._cache[d.policy, d.instances, d.line_capacity_bits_per_s].passes
        self.evaluations += 1
        missed = next((i for i, x in enumerate(e.setups) if not meets_sla(x, rate)), None)
        if missed is None:
            e.passes = rate
            return True
        self._missed(e, missed, rate)
        return False

    def _corner_misses(self, d: Deployment, rate: float) -> bool:
        """Whether `d`, a corner, misses the SLA at `rate`, asked only under the
        distribution that has missed most often in the walk: a miss there is a miss, which
        is all a corner test needs (it prunes on a miss only); a pass under it proves
        nothing and costs no second snapshot (issue #15: on pdd-paper's PDD every corner
        passed, each under both distributions). True only when proven."""
        e = self._entry(d, rate)
        if e is None:
            return rate > self._cache[d.policy, d.instances, d.line_capacity_bits_per_s].passes
        dist = max(range(len(self.dists)), key=lambda i: (self._misses[i], -i))
        self.evaluations += 1
        if meets_sla(e.setups[dist], rate):
            if len(self.dists) == 1:
                e.passes = rate  # the only distribution: met
            return False
        self._missed(e, dist, rate)
        return True

    def known(self, d: Deployment, dist: int) -> tuple[float, float]:
        """(a rate `d` met, a rate it missed) under hit-rate distribution `dist`, as the
        walk found them (`evaluate.goodput_rps` reuses them: the final metrics need not
        repeat its bisection)."""
        e = self._cache.get((d.policy, d.instances, d.line_capacity_bits_per_s), _Entry())
        return e.passes, e.missed.get(dist, math.inf)

    def _goodput(self, d: Deployment, low: float, ceiling: Ceiling) -> float:
        """The largest rate up to the goal's cap that `d` carries (it carries `low`; it
        cannot carry `ceiling`)."""
        high = self.goal.cap_rps
        below_cap = ceiling.at_most(high, strict=True)
        if not below_cap and (low >= high or self.meets(d, high)):
            return max(low, high)
        known = self._cache[d.policy, d.instances, d.line_capacity_bits_per_s]
        if below_cap:  # known to fail at the ceiling: bisect below it (or below a miss)
            below_miss = ceiling.at_most(known.fails, strict=True)
            high = ceiling.value() if below_miss else known.fails
        low, high = max(low, known.passes), min(high, known.fails)
        while high - low > GOODPUT_REL_TOL * high:
            mid = (low + high) / 2
            low, high = (mid, high) if self.meets(d, mid) else (low, mid)
        return low

    def consider(self, d: Deployment, cost: float, ceiling: Ceiling | None = None) -> None:
        """Check `d` against the best so far; keep it if it beats it."""
        ceiling = Ceiling(math.inf, []) if ceiling is None else ceiling
        g = self.goal
        if cost >= g.limit():
            return
        rate = g.threshold(cost)
        if not self.meets(d, rate):
            return
        if g.kind == "min_cost":
            g.take(d, cost, rate, -cost)
            return
        served = self._goodput(d, rate, ceiling)
        value = served / cost if g.kind == "max_bcr" else served
        if g.improves(value, cost):
            g.take(d, cost, served, value)

    def could_win(self, d: Deployment) -> bool:
        """Whether `d` costs less than the limit beyond which no plan beats the best."""
        cost = deployment_cost_usd_per_hour(self.scenario, d, self.gpus, self.tiers)
        return cost < self.goal.limit() and self._allowed(d.instances, d.policy)

    def consider_seed(self, d: Deployment) -> None:
        cost = deployment_cost_usd_per_hour(self.scenario, d, self.gpus, self.tiers)
        if self._allowed(d.instances, d.policy):
            self.consider(d, cost)

    # ---- the walk --------------------------------------------------------------------
    def run(self, max_evaluations: int | None = None) -> Outcome:
        """Walk the plans in cost order until nothing left can beat the best, or until
        `max_evaluations` evaluations in all (then `proven` is False; run again to go on:
        what was evaluated or ruled out is kept)."""
        budget = self.max_evaluations if max_evaluations is None else max_evaluations
        heap: list = []
        tie = itertools.count()
        steps = cut = 0

        def push(cost, *item):
            if cost < self.goal.limit():
                heapq.heappush(heap, (cost, next(tie), *item))

        for si, sp in enumerate(self.spaces):
            if all(sp.choices) and sp.lines:
                zero = (0,) * len(self.roles)
                push(self._group_cost(sp, zero), "group", si, zero, None)
        stopped, why = None, ""
        while heap:
            cost, _, kind, si, picks_at, where = heapq.heappop(heap)
            if cost >= self.goal.limit():
                break
            steps += 1
            why = _stop_reason(steps, self.evaluations, budget, self.deadline)
            if why:
                stopped = cost
                break
            sp = self.spaces[si]
            picks = tuple(sp.choices[r][i] for r, i in enumerate(picks_at))
            if kind == "group":
                for nxt in box_successors(picks_at, tuple(len(c) for c in sp.choices)):
                    push(self._group_cost(sp, nxt), "group", si, nxt, None)
                key = (id(sp), picks)
                rate = self.goal.threshold(cost)
                placed = not placement_problem(self.arch, picks)
                if (
                    placed
                    and key not in self._dead_groups
                    and self._group_alive(sp, picks, cost, rate)
                ):
                    # no plan of the group below these counts carries `rate`, the least any
                    # of its plans must carry (the threshold only rises with cost)
                    base = self._capped(sp, picks, self._needed(sp, picks, rate))
                    if all(b <= ch.max_count for ch, b in zip(picks, base, strict=True)):
                        self._base[si, picks_at] = base
                        start = (0,) * (len(picks) + 1)
                        cost_at = self._plan_cost(sp, picks, start, base)
                        push(cost_at, "plan", si, picks_at, start)
                else:
                    cut += 1
                    self._dead_groups.add(key)
                continue
            if (id(sp), picks) in self._dead_groups:
                continue  # every plan it would lead to is of the same group: none can win
            base = self._base[si, picks_at]
            counts = tuple(b + k for b, k in zip(base, where, strict=False))
            if not self._allowed(instance_groups(picks, counts), sp.policy):
                continue  # its successors only add instances: they break the same limit
            row_dead = self._row_dead(sp, picks, counts, where[-1], cost)
            spans = tuple(ch.max_count - b + 1 for ch, b in zip(picks, base, strict=True))
            for nxt in box_successors(where, (*spans, len(sp.lines))):
                if row_dead and self.prune_dead_lines and nxt[:-1] == where[:-1]:
                    # a bigger line for a row no affordable line lifts: that plan, and the
                    # bigger lines after it (its only successors), fail; the other entries
                    # keep their order, so the walk meets the rest as before (issue #15:
                    # 95 % of the default's steps at 150 req/s were such lines)
                    continue
                push(self._plan_cost(sp, picks, nxt, base), "plan", si, picks_at, nxt)
            if not row_dead:
                self._visit(sp, picks, counts, where[-1], cost)
        g = self.goal
        proven = stopped is None
        if g.kind == "min_cost":
            bound = g.value if proven else -stopped
        elif g.kind == "max_bcr":
            bound = g.value if proven else max(g.value, g.cap_rps / stopped)
        else:
            bound = g.value if proven else g.cap_rps
        return Outcome(
            g.best, g.cost, g.rate, g.value, proven, bound, self.evaluations, steps, cut,
            "" if proven else why, math.inf if proven else stopped,
        )  # fmt: skip

    def _capped(self, sp: Space, picks, needed) -> tuple[int, ...]:
        """The least counts of a group's plans that can win: the bounds' (`needed`),
        prefill raised to the fewest instances within the cap at the floor rate under
        every distribution (role_cap.fewest_within_cap; a plan with fewer is refused by
        `meets` anyway: on the default at 100 req/s, 9,006 of its 9,188 refusals named prefill).
        Past every count the candidate allows: max_count + 1 (no plan of it is pushed)."""
        out = []
        for ch, g in zip(picks, needed, strict=True):
            n = g.count
            for b in sp.bounds[ch]:
                key = (id(b), n)
                if key not in self._cap_counts:
                    self._cap_counts[key] = fewest_within_cap(b, self.goal.floor_rps,
                                                              self._cap_frac, n)  # fmt: skip
                got = self._cap_counts[key]
                n = ch.max_count + 1 if got is None else max(n, got)
            out.append(n)
        return tuple(out)

    def _group_cost(self, sp: Space, at) -> float:
        return self._least(sp, tuple(sp.choices[r][i] for r, i in enumerate(at)))

    def _plan_cost(self, sp: Space, picks, where, base) -> float:
        gpus = sum(
            ch.price_usd_per_hour * (b + k) for ch, b, k in zip(picks, base, where, strict=False)
        )
        return gpus + sp.lines[where[-1]].cost_usd_per_hour + sp.fixed_usd_per_hour

    def _visit(self, sp, picks, counts, line_at, cost) -> None:
        """A plan of a row that is not dead (run checked it with _row_dead, and these
        counts against the scenario's limits)."""
        lines = sp.lines
        group, row = (id(sp), picks), (id(sp), picks, counts)
        rate = self.goal.threshold(cost)
        spare = self.goal.limit() - cost + lines[line_at].cost_usd_per_hour
        top = self._top_line(sp, spare - lines[0].cost_usd_per_hour)
        ceiling = self._ceiling(sp, picks, counts, lines[line_at])
        if ceiling.at_most(rate):
            return
        # monotonicity, once a group or a row has needed an evaluation: if its corner
        # misses, so does every plan of it (checked again when the threshold has risen
        # enough since the corner last passed: _recheck)
        if self._recheck(group, rate) and not self._group_alive(
            sp, picks, self._least(sp, picks), rate, True
        ):
            self._dead_groups.add(group)
            return
        rich = self.deployment(sp, picks, counts, lines[top])
        if top - line_at >= 2 and self._recheck(row, rate) and self._corner_misses(rich, rate):
            self._dead_rows.add(row)
            return
        sizing = self._ceiling(sp, picks, counts, lines[line_at], sizing=True)
        self.consider(self.deployment(sp, picks, counts, lines[line_at]), cost, sizing)


def _stop_reason(steps: int, evaluations: int, budget: int, deadline: float) -> str:
    """Why the walk must stop before its next plan ("" to go on)."""
    if time.perf_counter() > deadline:
        return STOP_TIME
    if evaluations >= budget:
        return STOP_EVALUATIONS
    return STOP_STEPS if steps > MAX_STEPS else ""
