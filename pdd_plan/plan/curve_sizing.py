"""Sizing one structure for one period of a load curve, with the single-rate machinery.

A structure is what a plan over a curve commits to: the architecture, its routing policy
(and decode-side cache), one (datacenter, GPU, instance shape) per role, and the lines.
Its counts change period by period. A `PeriodSizer` is the exact search (search.py) of one
period's workload at min cost at the period's rate: its spaces list the candidates and
line options that can carry that rate, its bounds the fewest instances each candidate
needs (`least_counts`), and its `meets` is the SLA and utilisation-cap check every
single-rate plan passes. `needs` walks a structure's counts in increasing on-demand cost
from those least counts, the line fixed, and returns the first that meets the SLA: the
structure's cheapest counts at that period's rate, as the single-rate search finds them
(exact under the same monotonicity: an instance more never breaks an SLA that held).
"""

from __future__ import annotations

import heapq
import itertools
import math
import time
from dataclasses import dataclass

from pdd_plan.plan.prune import box_successors, instance_groups
from pdd_plan.plan.search import Search
from pdd_plan.plan.space import MAX_COUNT

MAX_WALK_STEPS = 5_000  # count vectors one structure's walk may pop in one period
STOPPED = "stopped"  # a walk cut by the deadline or its step cap: nothing proven


@dataclass(frozen=True)
class Structure:
    architecture: str
    policy_index: int  # into the architecture's policies (solve._policies)
    roles: tuple[tuple[str, str, str, int], ...]  # (role, datacenter, gpu, gpus/instance)
    line_counts: tuple[int, ...]  # lines per tier (empty: no line)


class PeriodSizer:
    """One distinct period workload's search, at min cost at its rate."""

    def __init__(self, search: Search, rate_rps: float):
        self.search, self.rate = search, rate_rps
        self._needs: dict = {}

    def choices(self, policy_index: int) -> tuple[dict, dict]:
        """({(role, dc, gpu, n): Choice} per role as a list, {line counts: LineOption})."""
        sp = self.search.spaces[policy_index]
        per_role = [
            {(ch.role, ch.datacenter, ch.gpu, ch.gpus_per_instance): ch for ch in role}
            for role in sp.choices
        ]
        return per_role, {o.counts: o for o in sp.lines}

    def _resolve(self, st: Structure):
        sp = self.search.spaces[st.policy_index]
        per_role, lines = self.choices(st.policy_index)
        picks = tuple(options.get(key) for options, key in zip(per_role, st.roles, strict=True))
        return sp, picks, lines.get(st.line_counts)

    def least_counts(self, st: Structure) -> tuple[int, ...] | None:
        """The fewest instances per role any plan of the structure meeting the SLA at this
        period's rate has (the search's bounds and the utilisation cap); None: no count of
        some role can, or the least already breaks a limit of the scenario."""
        sp, picks, line = self._resolve(st)
        if None in picks or line is None:
            return None
        s = self.search
        base = s._capped(sp, picks, s._needed(sp, picks, self.rate))
        if any(b > ch.max_count for ch, b in zip(picks, base, strict=True)):
            return None
        if not s._allowed(instance_groups(picks, base), sp.policy):
            return None
        return base

    def needs(self, st: Structure, deadline: float):
        """The structure's cheapest counts meeting the SLA at this rate; None when none
        does (proven); STOPPED when the walk was cut first."""
        if st not in self._needs:
            self._needs[st] = self._walk(st, deadline)
        return self._needs[st]

    def _walk(self, st: Structure, deadline: float):
        base = self.least_counts(st)
        if base is None:
            return None
        sp, picks, line = self._resolve(st)
        s, rate = self.search, self.rate
        if self._corner_misses(sp, picks, line):
            return None
        spans = tuple(ch.max_count - b + 1 for ch, b in zip(picks, base, strict=True))
        heap, tie = [(0.0, 0, (0,) * len(picks))], itertools.count(1)
        for _ in range(MAX_WALK_STEPS):
            if not heap:
                return None
            if time.perf_counter() > deadline:
                return STOPPED
            _, _, where = heapq.heappop(heap)
            counts = tuple(b + k for b, k in zip(base, where, strict=True))
            if not s._allowed(instance_groups(picks, counts), sp.policy):
                continue  # its successors only add instances: they break the same limit
            for nxt in box_successors(where, spans):
                cost = sum(ch.price_usd_per_hour * k for ch, k in zip(picks, nxt, strict=True))
                heapq.heappush(heap, (cost, next(tie), nxt))
            if s._ceiling(sp, picks, counts, line).at_most(rate):
                continue
            if s.meets(s.deployment(sp, picks, counts, line), rate):
                return counts
        return STOPPED

    def _corner_misses(self, sp, picks, line) -> bool:
        """Whether the most of every role the scenario allows misses the rate (then, by
        monotonicity, every count does); False where some role has no limit."""
        if any(ch.max_count >= MAX_COUNT for ch in picks):
            return False
        s = self.search
        corner = s.plans.within_availability(picks, [ch.max_count for ch in picks])
        if s._ceiling(sp, picks, corner, line).at_most(self.rate):
            return True
        return not s.meets(s.deployment(sp, picks, corner, line), self.rate)


def common_choices(sizers: list[PeriodSizer], policy_index: int) -> tuple[list[dict], dict]:
    """The candidates and line options every period has (the first period's objects)."""
    per_role, lines = sizers[0].choices(policy_index)
    for sizer in sizers[1:]:
        other_roles, other_lines = sizer.choices(policy_index)
        per_role = [{k: v for k, v in mine.items() if k in theirs}
                    for mine, theirs in zip(per_role, other_roles, strict=True)]  # fmt: skip
        lines = {k: v for k, v in lines.items() if k in other_lines}
    return per_role, lines


def committed_usd_per_hour(sizer: PeriodSizer, st: Structure) -> float:
    """The structure's lines and decode-side cache, $/h (paid every hour)."""
    sp = sizer.search.spaces[st.policy_index]
    _, lines = sizer.choices(st.policy_index)
    line = lines.get(st.line_counts)
    return (line.cost_usd_per_hour if line is not None else math.inf) + sp.fixed_usd_per_hour
