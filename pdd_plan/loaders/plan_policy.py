"""A plan file's `policy` and `decode_cache` against its scenario's `policy` (issue #22).

One value governs each choice, and a plan never runs a policy other than the one its
file and its scenario agree on:

- A key the plan file leaves out takes the scenario's value (`scenario_routing`: its
  fixed value, else the planner's default: threshold 0.9, catch_up, the cut-off as
  `short_output_cutoff.enabled` says).
- Where the scenario leaves the choice to the planner (`rld_hit_threshold: auto`,
  `handoff: auto`, the defaults), the plan's own value governs: it is the choice made.
- Where the scenario fixes it (a threshold, a handoff mode, the cut-off on or off: the
  scenario holds the cut-off's threshold, so it always fixes it), a plan that states
  another value is refused, one line naming the plan's key and the scenario file's.
  These three act on PDD only (the relay and its cut-off): other plans are not checked.
- The decode-side cache (PDD, CDC-PD): a plan that buys a tier (`decode_cache`) under a
  scenario that fixes the capacity (`decode_cache_capacity_tokens`) is refused, and so
  is a plan that names none under a scenario that makes the cache a purchase
  (`policy.decode_cache`); a plan's tier or size outside the scenario's options is the
  plan's own choice, as a threshold outside the planner's list is.
- The scenario's other policy keys (`utilization_cap_frac`, `mixed_pools`) shape the
  search only; a plan file has no such key.
"""

from __future__ import annotations

from pdd_plan.loaders.strict import Node
from pdd_plan.model.deployment import RoutingPolicy, scenario_routing
from pdd_plan.model.scenario import Scenario

KEYS = ("rld_hit_threshold", "handoff", "short_output_cutoff")
# where the scenario file says each (the plan's key -> the scenario's key path)
SCENARIO_KEYS = {
    "rld_hit_threshold": "policy.rld_hit_threshold",
    "handoff": "policy.handoff",
    "short_output_cutoff": "policy.short_output_cutoff.enabled",
}
CACHE_ARCHITECTURES = ("pdd", "cdc_pd")  # the ones with a main decode


def plan_policy(node: Node, scenario: Scenario, architecture: str | None) -> RoutingPolicy:
    """The routing policy of a plan file's `policy` node (module docstring)."""
    base = scenario_routing(scenario.policy)
    if node.is_missing or node.value is None:
        return base
    f = node.mapping(optional=KEYS)
    if f is None:
        return base
    stated = RoutingPolicy(
        f["rld_hit_threshold"].fraction(default=base.rld_hit_threshold),
        f["handoff"].choice(("catch_up", "one_shot"), default=base.handoff),
        f["short_output_cutoff"].boolean(default=base.short_output_cutoff),
    )
    if architecture == "pdd":
        _refuse_conflicts(f, stated, scenario)
    return stated


def _fixed(scenario: Scenario) -> dict:
    """The routing choices the scenario fixes (None: left to the planner)."""
    p = scenario.policy
    return {
        "rld_hit_threshold": p.rld_hit_threshold,
        "handoff": None if p.handoff == "auto" else p.handoff,
        "short_output_cutoff": p.short_output_cutoff.enabled,
    }


def _shown(value) -> str:
    """As the files write it: true, 0.9, catch_up."""
    if isinstance(value, bool):
        return str(value).lower()
    return f"{value:g}" if isinstance(value, float) else str(value)


def _refuse_conflicts(f: dict, stated: RoutingPolicy, scenario: Scenario) -> None:
    where = scenario.source_file or "the scenario"
    for key, fixed in _fixed(scenario).items():
        node = f[key]
        if fixed is None or node.is_missing or node.value is None:
            continue
        mine = getattr(stated, key)
        if mine == fixed or (isinstance(fixed, float) and abs(mine - fixed) <= 1e-12):
            continue
        left_open = "" if key == "short_output_cutoff" else ", or set the scenario's to auto"
        node.fail(
            f"{_shown(fixed)}, as {where}'s {SCENARIO_KEYS[key]} fixes it",
            f"one value governs: delete the plan's key to take the scenario's{left_open}",
        )


def check_cache(node: Node, bought: bool, scenario: Scenario, architecture: str) -> None:
    """A plan's decode-side cache against the scenario's (module docstring); `node`: the
    plan's `decode_cache` (missing when it names none)."""
    if architecture not in CACHE_ARCHITECTURES:
        return
    p, where = scenario.policy, scenario.source_file or "the scenario"
    if bought and p.decode_cache_capacity_tokens is not None:
        node.fail(
            f"no decode_cache: {where}'s policy.decode_cache_capacity_tokens fixes the "
            f"capacity ({p.decode_cache_capacity_tokens:g} tokens)",
            "one value governs: delete one of the two",
        )
    elif not bought and (node.is_missing or node.value is None) and p.decode_cache is not None:
        node.problems.add(
            node.path, "nothing",
            f"the cache tier the plan buys (decode_cache: {{tier: ..., tb: ...}}; tier none, "
            f"tb 0 for none): {where}'s policy.decode_cache makes the cache a purchase",
        )  # fmt: skip
