"""What the exact search (search.py) is after: the objective's notion of "better", the
cost beyond which no plan can beat the best found (`Goal`), and what a walk ends with
(`Outcome`)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from pdd_plan.model.deployment import Deployment

BCR_HEADROOM = 1.5  # max_bcr: goodput above this multiple of the offered rate earns nothing
GOODPUT_HEADROOM = 10.0  # max_goodput: the same cap
IMPROVE_REL_TOL = 1e-3  # a ratio or goodput must beat the best by this share to replace it


@dataclass
class Outcome:
    deployment: Deployment | None
    cost_usd_per_hour: float
    rate_rps: float  # the rate the plan is verified to carry
    value: float  # the objective: -cost, capped BCR or capped goodput
    proven: bool  # the walk finished: nothing unexplored can beat the plan
    bound: float  # the best value any plan could have (== value when proven)
    evaluations: int
    steps: int
    groups_cut: int  # groups ruled out whole (by a bound, or by their corner)
    # why the walk stopped before its proof ("" when proven): STOP_TIME, STOP_EVALUATIONS
    # or STOP_STEPS; and the cost it had reached: every plan cheaper was walked, so with
    # no plan found, any plan meeting the SLA costs at least this
    stopped_by: str = ""
    walked_below_usd_per_hour: float = 0.0


@dataclass
class Goal:
    """What "better" means for the objective, and the cost beyond which nothing is."""

    kind: str
    floor_rps: float  # every plan must meet the SLA at this rate
    cap_rps: float  # goodput above this earns nothing
    budget: float | None
    best: Deployment | None = None
    cost: float = math.inf
    value: float = -math.inf
    rate: float = 0.0

    @classmethod
    def of(cls, scenario) -> Goal:
        obj, offered = scenario.objective, scenario.workload.arrival_rate_per_s
        budget = obj.budget_usd_per_hour
        if obj.kind == "min_cost":
            demand = obj.demand_rps or offered
            return cls("min_cost", demand, demand, budget)
        if obj.kind == "max_bcr":
            return cls("max_bcr", offered, BCR_HEADROOM * offered, budget)
        return cls("max_goodput", offered * 1e-3, GOODPUT_HEADROOM * offered, budget)

    def limit(self) -> float:
        """Plans costing this much or more cannot beat the best."""
        most = math.inf if self.budget is None else self.budget * (1 + 1e-12)
        if self.best is None:
            return most
        if self.kind == "min_cost":
            return min(most, self.cost * (1 - 1e-12))
        if self.kind == "max_bcr":
            return min(most, self.cap_rps / (self.value * (1 + IMPROVE_REL_TOL)))
        # max_goodput at its cap: no plan's value is higher, but a cheaper one at the cap
        # wins the tie (a dear seed at the cap must not end the walk)
        return min(most, self.cost * (1 - 1e-12)) if self.value >= self.cap_rps else most

    def threshold(self, cost: float) -> float:
        """The rate a plan of this cost must meet the SLA at to beat the best."""
        if self.best is None:
            return self.floor_rps
        if self.kind == "max_bcr":
            return max(self.floor_rps, self.value * cost * (1 + IMPROVE_REL_TOL))
        if self.kind == "max_goodput":  # reaching the cap is enough: nothing counts above it
            return max(self.floor_rps, min(self.cap_rps, self.value * (1 + IMPROVE_REL_TOL)))
        return max(self.floor_rps, self.value * (1 + IMPROVE_REL_TOL))

    def improves(self, value: float, cost: float) -> bool:
        """Whether a plan of this value and cost replaces the best: a higher value, or
        (max_goodput) the cap reached again for less, as choose.py breaks ties."""
        if value > self.value:
            return True
        return self.kind == "max_goodput" and value >= self.cap_rps and cost < self.cost

    def take(self, deployment, cost, rate, value) -> None:
        self.best, self.cost, self.rate, self.value = deployment, cost, rate, value
