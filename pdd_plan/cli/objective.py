"""`solve --objective KIND`: what the optimiser maximises, over the scenario's
`objective.kind`, for the solve and everything the run loads (the report's cases too).

The kinds are the scenario key's (model/scenario.OBJECTIVES, plan/goal.py): `max_bcr`,
goodput per dollar; `min_cost`, the cheapest plan carrying `objective.demand_rps` (default
the arrival rate); `max_goodput`, the most goodput within `objective.budget_usd_per_hour`
(which the scenario must then give). The option reaches the scenario loader through an
environment variable (loaders/scenario.OBJECTIVE_ENV), as `--engine-profile` does, so the
worker processes the run forks load it too; it is set for the command alone.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

import typer

from pdd_plan.errors import InputError

DEFAULT_KIND = "max_bcr"  # a scenario without `objective` (loaders/scenario._objective)
SET_BY = "--objective"


def objective_option():
    return typer.Option(
        None,
        SET_BY,
        help="max_bcr (goodput per dollar), min_cost (the cheapest plan carrying "
        "objective.demand_rps, default the arrival rate) or max_goodput (the most goodput "
        "within objective.budget_usd_per_hour); default: the scenario's objective.kind",
    )


def check_objective(kind: str | None) -> None:
    """One line, exit 2, for a kind the optimiser does not know."""
    from pdd_plan.model.scenario import OBJECTIVES  # the models: when a solve runs

    if kind is None or kind in OBJECTIVES:
        return
    from pdd_plan.loaders.suggest import did_you_mean

    raise InputError.single("command line", SET_BY, repr(kind),
                            f"one of {', '.join(OBJECTIVES)}",
                            did_you_mean(kind, OBJECTIVES))  # fmt: skip


def scenario_kind(scenario: str | None) -> str:
    """The scenario file's own `objective.kind` (what --objective overrides)."""
    from pdd_plan.loaders.scenario import resolve_scenario_path
    from pdd_plan.loaders.strict import load_yaml

    data = load_yaml(resolve_scenario_path(scenario), "a pdd-plan scenario")
    objective = data.get("objective") if isinstance(data, dict) else None
    kind = objective.get("kind") if isinstance(objective, dict) else None
    return kind if isinstance(kind, str) else DEFAULT_KIND


@contextmanager
def forced_objective(kind: str | None) -> Iterator[None]:
    """Every scenario loaded inside (in this process or one it forks) takes `kind`."""
    if kind is None:
        yield
        return
    from pdd_plan.loaders.scenario import OBJECTIVE_ENV

    before = os.environ.get(OBJECTIVE_ENV)
    os.environ[OBJECTIVE_ENV] = kind
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(OBJECTIVE_ENV, None)
        else:
            os.environ[OBJECTIVE_ENV] = before


GOVERNED_KEYS = ("objective_set_by", "scenario_objective")


def governed(kind: str | None, own: str | None) -> dict:
    """What the answer's `solver` says about the objective when --objective was given
    (nothing when not: the scenario's governed, and the answer is as it always was)."""
    if kind is None:
        return {}
    return dict(zip(GOVERNED_KEYS, (SET_BY, own), strict=True))


def governed_text(solver: dict) -> str:
    """The table's words for it: empty when the scenario's objective governed."""
    if "objective_set_by" not in solver:
        return ""
    own = solver["scenario_objective"]
    over = f"over the scenario's {own}" if own != solver["objective"] else "as in the scenario"
    return f", set by {solver['objective_set_by']} {over}"
