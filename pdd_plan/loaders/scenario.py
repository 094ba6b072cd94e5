"""Scenario YAML -> Scenario, strictly: every problem of the file reported at once."""

from __future__ import annotations

import os
from pathlib import Path

from pdd_plan.errors import InputError
from pdd_plan.loaders.capacity_classes import capacity_classes
from pdd_plan.loaders.catalog import Catalog, data_dir
from pdd_plan.loaders.engine_profile import scenario_profile
from pdd_plan.loaders.input_files import path_exists
from pdd_plan.loaders.prices_apply import scenario_with_prices
from pdd_plan.loaders.scenario_cache import decode_cache_options
from pdd_plan.loaders.scenario_demand import scenario_sla, scenario_workload
from pdd_plan.loaders.scenario_kv import (
    RETIRED_ENGINE_KEYS,
    check_kv_layout,
    kv_layout,
    refuse_retired_kv_keys,
)
from pdd_plan.loaders.scenario_lists import offer, refuse_repeats, wan_links
from pdd_plan.loaders.scenario_model import scenario_model
from pdd_plan.loaders.scenario_routing import short_output_cutoff
from pdd_plan.loaders.scenario_spares import spare_nodes_per_role
from pdd_plan.loaders.strict import Node, Problems, did_you_mean, load_yaml
from pdd_plan.model import scenario as sc
from pdd_plan.model.deployment import ARCHITECTURE_ROLES
from pdd_plan.model.network.wan_streaming import POOL_HOLDS
from pdd_plan.model.placement import architecture_placeable, placement_needs, unplaceable_role
from pdd_plan.model.units import DTYPE_BYTES, GBIT_BITS, MS_S


def scenarios_dir() -> Path:
    return data_dir("scenarios")


def resolve_scenario_path(name_or_path: str | None) -> Path:
    """A path, or the name of a shipped scenario (`default`, `pdd-paper`)."""
    if name_or_path is None:
        return scenarios_dir() / "default.yaml"
    path = Path(name_or_path)
    if path_exists(path) or path.suffix in (".yaml", ".yml", ".json") or "/" in name_or_path:
        return path
    shipped = scenarios_dir() / f"{name_or_path}.yaml"
    if not path_exists(shipped):
        names = sorted(p.stem for p in scenarios_dir().glob("*.yaml"))
        raise InputError.single(
            name_or_path,
            "",
            "neither a file nor a shipped scenario",
            f"a scenario file or one of {', '.join(names)}",
            did_you_mean(name_or_path, names),
        )
    return shipped


# ---- sections -----------------------------------------------------------------------------
def _datacenters(node: Node, catalog: Catalog) -> tuple[list[sc.Datacenter], set[str]]:
    """The valid datacenters, and every well-formed id (valid datacenter or not)."""
    out, seen, role_nodes_of = [], set(), {}
    items = node.items(min_items=1) or []
    for item in items:
        f = item.mapping(
            required=("id", "roles", "gpus"),
            optional=("power_budget_kw", "budget_usd_per_hour", "name"),
        )
        if f is None:
            continue
        dc_id = f["id"].identifier(required=True)
        if dc_id is not None and dc_id in seen:
            f["id"].fail("an id not used by another datacenter")
        seen.add(dc_id)
        role_nodes = f["roles"].items(min_items=1) or []
        roles = [r.choice(sc.ROLES, required=True) for r in role_nodes]
        refuse_repeats(zip(role_nodes, roles, strict=True), "a role")
        parsed = [offer(g, catalog) for g in f["gpus"].items(min_items=1) or []]
        refuse_repeats(((gpu_node, gpu) for gpu_node, gpu, _ in parsed), "a GPU")
        offers = [o for _, _, o in parsed if o is not None]
        power_kw = f["power_budget_kw"].number(minimum=0, exclusive_minimum=True, maximum=1e7)
        budget = f["budget_usd_per_hour"].number(minimum=0, exclusive_minimum=True, maximum=1e9)
        name = f["name"].string(default="")
        if dc_id and None not in roles:
            role_nodes_of[dc_id] = role_nodes
            out.append(
                sc.Datacenter(
                    dc_id,
                    tuple(roles),
                    tuple(offers),
                    None if power_kw is None else power_kw * 1e3,
                    budget,
                    name or "",
                )
            )
    # A role no architecture can place there (model/placement.py); judged only when every
    # datacenter read, or a misspelt role elsewhere would be reported twice.
    for dc in out if len(out) == len(items) else ():
        for role_node, role in zip(role_nodes_of[dc.id], dc.roles, strict=True):
            why = unplaceable_role(role, dc, out)
            if why:
                role_node.fail(why)
    return out, seen - {None}


def _wan(node: Node, catalog: Catalog, dc_ids: set[str] | None) -> sc.Wan | None:
    """`dc_ids` None: the datacenters could not be read, so link ends are not checked."""
    f = node.mapping(
        required=("rtt_ms",),
        optional=(
            "tiers",
            "tier_prices_usd_per_month",
            "per_connection_gbit_per_s",
            "connection_pool_size",
            "max_lines",
            "links",
            "stream_during_prefill",
            "stripes_per_transfer",
            "pool_hold",
        ),
    )
    if f is None:
        return None
    rtt_ms = f["rtt_ms"].number(required=True, minimum=0, maximum=10_000)
    tiers = tuple(catalog.lines)
    if not f["tiers"].is_missing:
        tier_nodes = f["tiers"].items(1) or []
        tiers = tuple(t.reference(catalog.lines, "line tier") for t in tier_nodes)
        refuse_repeats(zip(tier_nodes, tiers, strict=True), "a line tier")
    prices = {}
    p = f["tier_prices_usd_per_month"]
    if not p.is_missing and p.value is not None:
        for key, child in (p.mapping(patterns=(r".*",)) or {}).items():
            Node(key, child.path, child.problems).reference(catalog.lines, "line tier")
            price = child.number(required=True, minimum=0, maximum=1e9)
            if price is not None:
                prices[key] = price
    links = wan_links(f["links"], dc_ids)
    per_conn = f["per_connection_gbit_per_s"].number(
        default=1.0, minimum=0, exclusive_minimum=True, maximum=1e4
    )
    pool = f["connection_pool_size"].integer(default=64, minimum=1, maximum=1_000_000)
    max_lines = f["max_lines"].integer(default=16, minimum=0, maximum=sc.MAX_LINES)
    engine = _wan_engine(f, pool)
    if rtt_ms is None or None in tiers:
        return None
    return sc.Wan(
        rtt_ms * MS_S, tiers, prices, per_conn * GBIT_BITS, pool, max_lines, links, **engine
    )


def _wan_engine(f, pool: int | None) -> dict:
    """How the transfer engine uses the line (model/network/wan_streaming.py)."""
    stripes = f["stripes_per_transfer"].integer(
        default=1, minimum=1, maximum=pool if pool is not None else 1_000_000
    )
    return {
        "stream_during_prefill": f["stream_during_prefill"].boolean(default=False),
        "stripes_per_transfer": stripes if stripes is not None else 1,
        "pool_hold": f["pool_hold"].choice(POOL_HOLDS, default="transfer_end"),
    }


# `solve --objective KIND` sets this for the run and the worker processes it starts (the
# report's cases), so every scenario loaded in the run takes it over its `objective.kind`
OBJECTIVE_ENV = "PDD_PLAN_OBJECTIVE"
_OBJECTIVE_KEYS = ("kind", "demand_rps", "budget_usd_per_hour")


def _objective(node: Node, default_demand: float | None) -> sc.Objective:
    forced = os.environ.get(OBJECTIVE_ENV) or None
    f = None
    if not node.is_missing:
        required = () if forced else ("kind",)
        optional = tuple(k for k in _OBJECTIVE_KEYS if k not in required)
        f = node.mapping(required=required, optional=optional)
    if f is None and forced is None:
        return sc.Objective("max_bcr")
    f = f or {k: Node.absent(f"objective.{k}", node.problems) for k in _OBJECTIVE_KEYS}
    kind = f["kind"].choice(sc.OBJECTIVES, required=forced is None)  # the file's, checked
    if forced is not None:
        if forced not in sc.OBJECTIVES:
            node.problems.add(OBJECTIVE_ENV, repr(forced), f"one of {', '.join(sc.OBJECTIVES)}")
        kind = forced
    demand = f["demand_rps"].number(minimum=sc.MIN_ARRIVAL_RATE_PER_S, maximum=1e7, unit="req/s")
    budget = f["budget_usd_per_hour"].number(minimum=0, exclusive_minimum=True, maximum=1e9)
    if kind == "max_goodput" and budget is None:
        named = "--objective max_goodput" if forced else "max_goodput"
        f["budget_usd_per_hour"].fail(f"a budget ({named} maximises goodput within it)")
    return sc.Objective(
        kind or "max_bcr", demand or (default_demand if kind == "min_cost" else None), budget
    )


_POLICY_KEYS = (
    "rld_hit_threshold",
    "handoff",
    "short_output_cutoff",
    "utilization_cap_frac",
    "decode_cache_capacity_tokens",
    "decode_cache",
    "mixed_pools",
)


def _policy(node: Node, catalog: Catalog) -> sc.Policy:
    f = node.mapping(optional=_POLICY_KEYS) if not node.is_missing else None
    # absent or unreadable: every key absent, so each takes its default
    f = f or {k: Node(None, k, node.problems) for k in _POLICY_KEYS}
    threshold = None
    if f["rld_hit_threshold"].value != "auto":
        threshold = f["rld_hit_threshold"].fraction()
    cutoff = short_output_cutoff(f["short_output_cutoff"])
    return sc.Policy(
        rld_hit_threshold=threshold,
        handoff=f["handoff"].choice(sc.HANDOFF_MODES, default="auto"),
        short_output_cutoff=cutoff,
        utilization_cap_frac=f["utilization_cap_frac"].number(
            default=0.85, minimum=sc.MIN_UTILIZATION_CAP_FRAC, maximum=1.0
        ),
        decode_cache_capacity_tokens=f["decode_cache_capacity_tokens"].number(
            minimum=0, maximum=1e15
        ),
        decode_cache=decode_cache_options(
            f["decode_cache"], f["decode_cache_capacity_tokens"], catalog
        ),
        mixed_pools=f["mixed_pools"].boolean(default=True),
    )


def _costs(node: Node, datacenters: list[sc.Datacenter]) -> sc.Costs:
    if node.is_missing:
        return sc.Costs()
    f = node.mapping(
        optional=(
            "include_power",
            "power_usd_per_kwh",
            "pue",
            "amortization_years",
            "charge_whole_nodes",
            "spares",
            "capacity_classes",
        )
    )
    if f is None:
        return sc.Costs()
    return sc.Costs(
        f["include_power"].boolean(default=False),
        f["power_usd_per_kwh"].number(default=0.10, minimum=0, maximum=100),
        f["pue"].number(default=1.3, minimum=1.0, maximum=5.0),
        f["amortization_years"].number(
            default=sc.Costs.amortization_years, minimum=0, exclusive_minimum=True, maximum=30
        ),
        f["charge_whole_nodes"].boolean(default=False),
        spare_nodes_per_role(f["spares"]),
        capacity_classes(f["capacity_classes"], datacenters),  # plans over a load curve
    )


def _engine(node: Node) -> sc.Engine:
    if node.is_missing:
        return sc.Engine()
    f = node.mapping(
        optional=(
            "kv_uncompressed_tokens",
            "kv_layout_source",
            *RETIRED_ENGINE_KEYS,
            "profile",
            "handoff_fixed_ms",
            "handoff_fixed_source",
            "reserve_max_output",
            "prefill_batching",
            "prefill_token_budget_per_gpu",
        )  # fmt: skip
    )
    if f is None:
        return sc.Engine()
    refuse_retired_kv_keys(f)
    # the engine's fixed cost per RLD -> MD handoff (model/decode/handoff.py), with its source
    fixed_ms = f["handoff_fixed_ms"].number(minimum=0, maximum=60_000)
    if fixed_ms is not None and f["handoff_fixed_source"].is_missing:
        f["handoff_fixed_source"].fail("a source for handoff_fixed_ms")
    return sc.Engine(
        kv_layout(f),
        handoff_fixed_s=None if fixed_ms is None else fixed_ms / 1e3,
        handoff_fixed_source=f["handoff_fixed_source"].string(default=""),
        reserve_max_output=bool(f["reserve_max_output"].boolean(default=False)),
        prefill_token_budget_per_gpu=_prefill_budget(f),
    )


def _prefill_budget(f) -> int | None:
    """Tokens per prefill step and GPU (model/queueing/prefill_batch.py); None: batching off."""
    budget = f["prefill_token_budget_per_gpu"].integer(
        default=sc.PREFILL_TOKEN_BUDGET_PER_GPU,
        minimum=1,
        maximum=sc.MAX_PREFILL_TOKEN_BUDGET_PER_GPU,
    )
    return budget if f["prefill_batching"].boolean(default=True) else None


def _architectures(
    node: Node, datacenters: list[sc.Datacenter], roles_known: bool = True
) -> tuple[str, ...]:
    """The architectures to compare; `roles_known` False (a datacenter had problems)
    skips the check that some datacenter allows each one's roles."""
    roles = {r for dc in datacenters for r in dc.roles}
    possible = tuple(a for a in sc.ARCHITECTURES if architecture_placeable(a, datacenters))
    if node.is_missing:
        return possible
    items = node.items(1) or []
    chosen = tuple(a.choice(sc.ARCHITECTURES, required=True) for a in items)
    refuse_repeats(zip(items, chosen, strict=True), "an architecture")
    for item, arch in zip(items, chosen, strict=False):
        if arch and arch not in possible and roles_known:
            missing = sorted(set(ARCHITECTURE_ROLES[arch]) - roles)
            item.fail(
                f"an architecture whose roles some datacenter allows (missing: "
                f"{', '.join(missing)})"
                if missing
                else f"an architecture the datacenters can place ({placement_needs(arch)})"
            )
    return tuple(a for a in chosen if a)


def load_scenario(path: Path | str, catalog: Catalog | None = None) -> sc.Scenario:
    """Read and check a scenario file; raise InputError listing every problem."""
    path = Path(path)
    catalog = catalog or Catalog()
    problems = Problems(str(path))
    root = Node(load_yaml(path, "a pdd-plan scenario"), "", problems)
    f = root.mapping(
        required=("name", "datacenters", "workload", "sla"),
        optional=(
            "model",
            "model_file",
            "description",
            "kv_dtype",
            "weight_dtype",
            "wan",
            "objective",
            "policy",
            "costs",
            "engine",
            "architectures",
            "prices",
        ),
    )
    problems.raise_if_any()
    for section in ("wan", "objective", "policy", "costs", "engine", "architectures"):
        if f[section].value is None:  # an optional section written empty: its defaults
            f[section] = Node.absent(f[section].path, problems)
    model, model_file = scenario_model(f, catalog, path)
    before = len(problems.items)
    datacenters, dc_ids = _datacenters(f["datacenters"], catalog)
    datacenters_ok = len(problems.items) == before
    wan = None
    if not f["wan"].is_missing:
        wan = _wan(f["wan"], catalog, dc_ids if dc_ids or datacenters_ok else None)
    elif len(dc_ids) > 1:
        f["wan"].fail("a wan section (the scenario has several datacenters)")
    workload = scenario_workload(f["workload"])
    scenario = sc.Scenario(
        name=f["name"].string(required=True) or "",
        description=f["description"].string(default=""),
        model=model or "",
        kv_dtype=f["kv_dtype"].choice(tuple(DTYPE_BYTES), default="bf16"),
        weight_dtype=f["weight_dtype"].choice(tuple(DTYPE_BYTES), default=None),
        datacenters=tuple(datacenters),
        wan=wan or sc.Wan(0.0, (), {}, GBIT_BITS, 64, 0),
        workload=workload,
        sla=scenario_sla(f["sla"]),
        objective=_objective(f["objective"], workload.arrival_rate_per_s if workload else None),
        policy=_policy(f["policy"], catalog),
        costs=_costs(f["costs"], datacenters),
        engine=scenario_profile(_engine(f["engine"]), f["engine"], path),
        architectures=_architectures(f["architectures"], datacenters, datacenters_ok),
        source_file=str(path),
        model_file=model_file,
    )
    scenario = scenario_with_prices(scenario, root.value, f["prices"], catalog)
    problems.raise_if_any()
    if model:  # the model entry itself must load
        spec = catalog.model_at(model_file) if model_file else catalog.model(model)
        check_kv_layout(scenario, spec, path)
    return scenario
