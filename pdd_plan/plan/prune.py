"""The proofs the exact search (search.py) skips plans with, as methods of the walk (it
mixes them in; they read its spaces, goal and memos):

- a plan's ceiling (bounds.py): the least of its line's saturation rate, its connection
  pool's (pool_ceiling.py) and each role's max_rate at its count; a row (one set of
  counts, any line) whose ceiling no affordable line lifts to the rate is dead;
- a group's least counts at a rate (`_needed`, each role's min_count), which must fit the
  scenario's limits;
- a group's corner (the most of every role and line a plan under the limit could have):
  above its ceiling, or (evaluated; monotonicity) missing the SLA, the group is dead.
"""

from __future__ import annotations

import math

from pdd_plan.model.deployment import InstanceGroup
from pdd_plan.model.setup import DECODE_ROLE, PREFILL_ROLE
from pdd_plan.plan.bounds import Ceiling
from pdd_plan.plan.pool_ceiling import pool_max_rps
from pdd_plan.plan.space import CROSSING, MAX_COUNT, LineOption, Space

# a corner that passed is tested again once the rate rose this much, the margin doubling
# with each pass (issue #15: on pdd-paper's PDD the threshold climbs 50 -> 72 req/s in ~1 %
# steps and every group's richly provisioned corner passed each of its 103 tests, each a
# full evaluation under both hit-rate distributions, 40 % of the solve; a corner that has
# passed often is far from missing, and delaying a test costs only evaluations of plans
# that fail, never a plan: the corner test only ever skips plans that would fail)
RECHECK_REL = 0.02


class Pruning:
    """Mixed into search.Search: reads its `spaces`, `plans`, `goal`, `deployment`,
    `_allowed`, `_corner_misses` and its memos (`_counts`, `_tried`, `_dead_rows`,
    `_dead_groups`, `_pools`)."""

    def _ceiling(self, sp: Space, picks, counts, line: LineOption, sizing=False) -> Ceiling:
        """The most any plan of these counts and line could carry (bounds.py): above it a
        queue saturates or a limit is missed whatever the model's other terms are.
        `sizing`: without the caps that bounds.CeilingOnly adds (a goodput bisection
        starts from it: its iterates are what they were before those caps)."""
        terms = [
            (b.sizing() if sizing else b, n)
            for ch, n in zip(picks, counts, strict=True)
            for b in sp.bounds[ch]
        ]
        if sizing:
            return Ceiling(line.max_rate_rps, terms)
        return Ceiling(min(line.max_rate_rps, self._pool_rps(sp, picks, line)), terms)

    def _pool_rps(self, sp: Space, picks, line: LineOption) -> float:
        """pool_ceiling.pool_max_rps of the policy's routes on this line between the
        prefill's and the finishing decode role's datacenters, the least over the hit-rate
        distributions (every one must be met); once per policy, line and RTT."""
        if self.arch not in CROSSING or not line.capacity_bits_per_s:
            return math.inf
        at = {ch.role: ch.datacenter for ch in picks}
        rtt = self.scenario.wan.rtt_between(at[PREFILL_ROLE[self.arch]], at[DECODE_ROLE[self.arch]])
        key = (id(sp), line.capacity_bits_per_s, rtt)
        if key not in self._pools:
            if id(sp) not in self._pools:  # the policy's routes, once
                self._pools[id(sp)] = [
                    self.plans._classes_routes(sp.policy, c) for c in self.plans.classes
                ]
            self._pools[key] = min(
                pool_max_rps(self.scenario, self.arch, c, r, line.capacity_bits_per_s, rtt)
                for c, r in self._pools[id(sp)]
            )
        return self._pools[key]

    def _top_line(self, sp: Space, spare: float) -> int:
        """The line option with the most capacity within `spare` of the cheapest line."""
        base = sp.lines[0].cost_usd_per_hour
        return max(i for i, o in enumerate(sp.lines) if o.cost_usd_per_hour - base <= spare)

    def _group_alive(self, sp: Space, picks, cost: float, rate: float, check=False) -> bool:
        """False when no plan of the group (cheapest: `cost`) can meet the SLA at `rate`:
        its cheapest plan breaks a limit of the scenario, or its corner (the most of every
        role and line a plan under the limit could have) is above its ceiling, or (with
        `check`: evaluated; monotonicity) misses the SLA."""
        if not self._allowed(instance_groups(picks, [ch.min_count for ch in picks]), sp.policy):
            return False
        if not self._allowed(self._needed(sp, picks, rate), sp.policy):
            return False  # the least instances that carry `rate` already break a limit
        spare = self.goal.limit() - cost
        if math.isfinite(spare):
            counts = [
                min(ch.max_count, ch.min_count + math.floor(spare / ch.price_usd_per_hour + 1e-9))
                for ch in picks
            ]
        elif all(ch.max_count < MAX_COUNT for ch in picks):
            counts, spare = [ch.max_count for ch in picks], math.inf
        else:
            return True
        counts = self.plans.within_availability(picks, counts)
        top = self._top_line(sp, spare)
        if self._ceiling(sp, picks, counts, sp.lines[top]).at_most(rate):
            return False
        return not check or not self._corner_misses(
            self.deployment(sp, picks, counts, sp.lines[top]), rate
        )

    def _needed(self, sp: Space, picks, rate: float) -> list[InstanceGroup]:
        """Each role at the fewest instances its bounds say carry `rate` (no fewer than the
        space's least): every plan of the group that meets `rate` has at least these, and
        GPUs, power and money only grow with the counts, so if these break a limit of the
        scenario, so does every such plan (roles sharing a pool of GPUs, which the
        per-role bounds alone do not see)."""
        counts = []
        for ch in picks:
            need = [self._min_count(b, rate) for b in sp.bounds[ch]]
            if None in need:
                need = [ch.max_count + 1]  # cannot carry `rate` at all: over any limit
            counts.append(max(ch.min_count, *need))
        return instance_groups(picks, counts)

    def _min_count(self, b, rate: float) -> int | None:
        """b.min_count(rate), settled without the bound's bisection where two rates asked
        before bracket `rate` with the same count: the fewest instances that carry a rate
        never fall as it rises (the monotonicity in the rate the walk already assumes), so
        the count between them is theirs (None: no count carries it). The walk's threshold
        rises with cost in small steps: most groups ask rates already bracketed."""
        known = self._counts.setdefault(id(b), {})
        if rate in known:
            return known[rate]
        below = max((r for r in known if r < rate), default=None)
        above = min((r for r in known if r > rate), default=None)
        if below is not None and above is not None and known[below] == known[above]:
            return known[below]
        known[rate] = b.min_count(rate)
        return known[rate]

    def _row_dead(self, sp, picks, counts, line_at, cost) -> bool:
        """Whether no plan of these counts can win: the group or the row (these counts,
        any line) is known dead, or no line it can afford lifts its ceiling to the rate
        (then the row is marked dead)."""
        row = (id(sp), picks, counts)
        if (id(sp), picks) in self._dead_groups or row in self._dead_rows:
            return True
        lines, rate = sp.lines, self.goal.threshold(cost)
        spare = self.goal.limit() - cost + lines[line_at].cost_usd_per_hour
        top = self._top_line(sp, spare - lines[0].cost_usd_per_hour)
        if self._ceiling(sp, picks, counts, lines[top]).at_most(rate):
            self._dead_rows.add(row)
            return True
        return False

    def _recheck(self, key, rate: float) -> bool:
        """Whether to test the corner of a group or row now: not at its first evaluation
        (a corner that passes is an evaluation wasted), then when the rate has risen by
        RECHECK_REL x 2^(k-1) since its corner last passed, after k tests."""
        if key not in self._tried:  # nothing evaluated yet
            self._tried[key] = (0.0, 0)
            return False
        last, tests = self._tried[key]
        if tests and rate < last * (1 + RECHECK_REL * 2 ** (tests - 1)):
            return False
        self._tried[key] = (rate, tests + 1)
        return True

    def _least(self, sp: Space, picks) -> float:
        return (
            sum(ch.price_usd_per_hour * ch.min_count for ch in picks)
            + sp.lines[0].cost_usd_per_hour
            + sp.fixed_usd_per_hour
        )


def instance_groups(picks, counts) -> list[InstanceGroup]:
    return [
        InstanceGroup(ch.role, ch.datacenter, ch.gpu, ch.gpus_per_instance, n)
        for ch, n in zip(picks, counts, strict=True)
    ]


def box_successors(at: tuple[int, ...], limits: tuple[int, ...]):
    """Each tuple of the box once: raise one coordinate at or after the last nonzero one."""
    last = max((i for i, v in enumerate(at) if v), default=0)
    for i in range(last, len(at)):
        if at[i] + 1 < limits[i]:
            yield at[:i] + (at[i] + 1,) + at[i + 1 :]
