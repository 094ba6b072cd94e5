"""Plan files -> Deployment, strictly.

A plan file is YAML with the `plan` keys of design.md §7; the JSON result of `solve` or
`evaluate` (and `solve --out DIR`'s plan.json) is one too, its result keys skipped; a bare
plan mapping (the `plan` keys at the top level) is read as well. Its policy against the
scenario's: loaders/plan_policy.py (which governs, what is refused)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from pdd_plan.loaders.catalog import Catalog
from pdd_plan.loaders.plan_policy import check_cache, plan_policy
from pdd_plan.loaders.scenario_cache import MAX_TB
from pdd_plan.loaders.strict import Node, Problems, load_yaml
from pdd_plan.loaders.suggest import did_you_mean
from pdd_plan.model.caches.cache_tier import NO_TIER, CacheBuy
from pdd_plan.model.deployment import (
    ARCHITECTURE_ROLES,
    Deployment,
    InstanceGroup,
    LineLease,
)
from pdd_plan.model.placement import placement_problem
from pdd_plan.model.scenario import Scenario
from pdd_plan.model.units import GBIT_BITS


def _instances(node: Node, scenario: Scenario, architecture: str | None) -> list[InstanceGroup]:
    groups = []
    roles = ARCHITECTURE_ROLES.get(architecture or "", ())
    for item in node.items(min_items=1) or []:
        f = item.mapping(required=("role", "datacenter", "gpu", "gpus_per_instance", "count"))
        if f is None:
            continue
        role = f["role"].choice(
            roles or tuple(r for rs in ARCHITECTURE_ROLES.values() for r in rs), required=True
        )
        dc_id = f["datacenter"].reference({d.id for d in scenario.datacenters}, "datacenter")
        gpu = f["gpu"].string(required=True, expected="a GPU id")
        gpus = f["gpus_per_instance"].integer(required=True, minimum=1, maximum=4096)
        count = f["count"].integer(required=True, minimum=0, maximum=1_000_000)
        if None in (role, dc_id, gpu, gpus, count):
            continue
        dc = scenario.datacenter(dc_id)
        offered = {o.gpu for o in dc.gpus}
        if gpu not in offered:
            f["gpu"].fail(
                f"a GPU that datacenter {dc_id} offers ({', '.join(sorted(offered))})",
                did_you_mean(gpu, offered),
            )
        elif role not in dc.roles:
            f["role"].fail(f"a role datacenter {dc_id} allows ({', '.join(dc.roles)})")
        else:
            groups.append(InstanceGroup(role, dc_id, gpu, gpus, count))
    return groups


def _lines(node: Node, catalog: Catalog) -> list[LineLease]:
    if node.is_missing or node.value is None:
        return []
    leases = []
    for item in node.items() or []:
        f = item.mapping(required=("tier", "count"), optional=("capacity_gbit_per_s",))
        if f is None:
            continue
        tier = f["tier"].reference(catalog.lines, "line tier")
        count = f["count"].integer(required=True, minimum=0, maximum=10_000)
        stated = f["capacity_gbit_per_s"].number(minimum=0, maximum=1e6)
        if tier is None or count is None:
            continue
        capacity = catalog.lines[tier].capacity_bits_per_s
        if stated is not None and abs(stated * GBIT_BITS - capacity) > 1e-6 * capacity:
            f["capacity_gbit_per_s"].fail(f"{capacity / GBIT_BITS:g} (the capacity of {tier})")
        leases.append(LineLease(tier, capacity, count))
    return leases


def _decode_cache(node: Node, catalog: Catalog) -> CacheBuy | None:
    """The cache tier a plan buys (`decode_cache:`, as plan.json writes it); its price is
    the catalog's unless the file states one (a plan priced under another catalog)."""
    if node.is_missing or node.value is None:
        return None
    f = node.mapping(required=("tier", "tb"), optional=("price_usd_per_tb_month",))
    if f is None:
        return None
    tb = f["tb"].number(required=True, minimum=0, maximum=MAX_TB)
    price = f["price_usd_per_tb_month"].number(minimum=0, maximum=1e9)
    if tb is None:  # refused above: whether a tier is bought, so what names one, is unknown
        return None
    if tb == 0:  # no tier bought: the tier's name is "none" (or any, and ignored)
        f["tier"].string(required=True)
        return CacheBuy(NO_TIER, 0.0)
    tier = f["tier"].reference(catalog.cache_tiers, "cache tier")
    if tier is None:
        return None
    known = catalog.cache_tiers[tier]
    return CacheBuy(tier, tb, known.price_usd_per_tb_month if price is None else price,
                    known.read_bytes_per_s())  # fmt: skip


# what a solve or evaluate result (`--format json`, `--out DIR`'s plan.json) holds beside
# its `plan`: written by the tool, so known and not read back (`confidence`: solve
# --confidence; `saturation`: a saturated evaluate). The plan schema lists the same keys.
RESULT_KEYS = ("scenario", "status", "metrics", "solver", "role_arithmetic", "architecture_choice",
               "decode_split", "confidence", "saturation")  # fmt: skip
_PLAN_KEYS = {"architecture", "instances", "lines", "policy", "decode_cache"}


def _plan_node(root: Node) -> Node:
    """The plan mapping of a file: under `plan:` (a plan file, or a result document), or
    the file's top level itself (a bare plan: `architecture:`, `instances:`...)."""
    value = root.value
    if isinstance(value, dict) and "plan" not in value and _PLAN_KEYS & set(value):
        return root
    top = root.mapping(required=("plan",), optional=RESULT_KEYS)
    return top["plan"] if top else root


def load_plan(path: Path | str, scenario: Scenario, catalog: Catalog | None = None) -> Deployment:
    """Read a plan file against its scenario; every problem is reported at once."""
    path = Path(path)
    catalog = catalog or Catalog()
    problems = Problems(str(path))
    root = Node(load_yaml(path, "a pdd-plan plan file"), "", problems)
    plan = _plan_node(root)
    problems.raise_if_any()
    f = plan.mapping(
        required=("architecture", "instances"), optional=("lines", "policy", "decode_cache")
    )
    problems.raise_if_any()
    architecture = f["architecture"].choice(tuple(ARCHITECTURE_ROLES), required=True)
    instances = _instances(f["instances"], scenario, architecture)
    lines = _lines(f["lines"], catalog)
    policy = plan_policy(f["policy"], scenario, architecture)  # or refused: which governs
    cache = _decode_cache(f["decode_cache"], catalog)
    if cache is not None and architecture not in ("pdd", "cdc_pd"):
        f["decode_cache"].fail("no decode_cache (only pdd and cdc_pd have a main decode)")
    elif architecture is not None:
        check_cache(f["decode_cache"], cache is not None, scenario, architecture)
    policy = dataclasses.replace(policy, decode_cache=cache)
    problems.raise_if_any()
    present = {g.role for g in instances if g.count > 0}
    missing = [r for r in ARCHITECTURE_ROLES[architecture] if r not in present]
    if missing:
        f["instances"].fail(
            f"instances for every role of {architecture}: missing {', '.join(missing)}"
        )
    misplaced = placement_problem(architecture, instances)
    if misplaced:
        f["instances"].fail(f"instances placed as {architecture} places them: {misplaced}")
    if architecture in ("pdd", "cdc_pd") and not any(line.count for line in lines):
        f["lines"].fail(f"at least one leased line ({architecture} crosses datacenters)")
    problems.raise_if_any()
    return Deployment(architecture, tuple(instances), tuple(lines), policy)
