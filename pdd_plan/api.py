"""The Python API: the same calls as the CLI, returning the same JSON-ready dicts."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from pdd_plan import __version__
from pdd_plan.errors import InfeasibleError, SaturatedError
from pdd_plan.loaders.catalog import Catalog
from pdd_plan.loaders.plan_file import load_plan
from pdd_plan.loaders.scenario import load_scenario, resolve_scenario_path
from pdd_plan.model import evaluate as ev
from pdd_plan.model import routing as rt
from pdd_plan.model.deployment_json import plan_json
from pdd_plan.model.evaluate import DECODE_ROLE, PREFILL_ROLE, Setup, evaluate, prepare
from pdd_plan.model.queueing import WaitModel
from pdd_plan.model.scenario import Scenario
from pdd_plan.model.workload import DEFAULT_RESOLUTION, Distribution, Empirical
from pdd_plan.report.bom import bom_csv
from pdd_plan.report.resolved import scenario_json
from pdd_plan.report.views import scenario_summary
from pdd_plan.units import GBIT_BITS


def evaluate_plan(
    scenario: str | Path | None,
    plan: str | Path,
    catalog: Catalog | None = None,
    resolution: tuple[int, int, int] = DEFAULT_RESOLUTION,
) -> dict:
    """`pdd-plan evaluate SCENARIO PLAN`: the design.md §7 JSON of one deployment."""
    catalog = catalog or Catalog()
    s = load_scenario(resolve_scenario_path(str(scenario) if scenario else None), catalog)
    deployment = load_plan(plan, s, catalog)
    setup = prepare(s, deployment, catalog.model_for(s), catalog.gpus, catalog.lines, resolution)
    metrics, _ = evaluate(setup)
    return {
        "scenario": s.name,
        "status": "evaluated",
        "plan": plan_json(deployment),
        "metrics": metrics.to_json(),
    }


def solve_scenario(
    scenario: str | Path | None = None,
    architecture: str = "pdd",
    catalog: Catalog | None = None,
    resolution: tuple[int, int, int] = DEFAULT_RESOLUTION,
    time_limit_s: float = 30.0,
) -> tuple[dict, SolveFiles]:
    """`pdd-plan solve`: the design.md §7 JSON of the best verified plan, and its files."""
    catalog = catalog or Catalog()
    s = load_scenario(resolve_scenario_path(str(scenario) if scenario else None), catalog)
    return solve_loaded(s, architecture, catalog, resolution, time_limit_s)


def solve_loaded(
    s: Scenario,
    architecture: str = "pdd",
    catalog: Catalog | None = None,
    resolution: tuple[int, int, int] = DEFAULT_RESOLUTION,
    time_limit_s: float = 30.0,
) -> tuple[dict, SolveFiles]:
    """`solve_scenario` on a Scenario already loaded (or derived from one, as the report's
    sensitivity cases are)."""
    from pdd_plan.plan.solve import solve  # PuLP loads only for the commands that solve

    catalog = catalog or Catalog()
    result = solve(
        s,
        catalog.model_for(s),
        catalog.gpus,
        catalog.lines,
        architecture,
        resolution,
        time_limit_s,
    )
    out = {
        "scenario": s.name,
        "status": result.status,
        "plan": plan_json(result.deployment) if result.deployment else None,
        "metrics": result.metrics.to_json() if result.metrics else None,
        "solver": {
            "name": "HiGHS via PuLP",
            "objective": s.objective.kind,
            "sized_rate_rps": result.rate_rps,
            "wall_s": result.wall_s,
            "policies_tried": [
                {"rld_hit_threshold": a.policy.rld_hit_threshold, "handoff": a.policy.handoff,
                 "utilization_cap_frac": a.utilization_cap_frac, "outcome": a.outcome}
                for a in result.attempts
            ],
            "pruned_candidates": [
                {"candidate": c.key, "reason": c.pruned} for c in result.candidates if c.pruned
            ],
        },
    }  # fmt: skip
    out["role_arithmetic"] = None
    if result.deployment is not None:
        setup = prepare(
            s, result.deployment, catalog.model_for(s), catalog.gpus, catalog.lines, resolution
        )
        out["role_arithmetic"] = role_arithmetic(setup, s.workload.arrival_rate_per_s)
    prices = {
        t: s.wan.tier_price_usd_per_month.get(t, catalog.lines[t].price_usd_per_month)
        for t in catalog.lines
    }
    bom = bom_csv(out["plan"], s, prices) if out["plan"] else ""
    return out, SolveFiles(result.lp_text, bom, scenario_json(s))


@dataclass(frozen=True)
class SolveFiles:
    """What `solve` can write besides its JSON: the LP, the BOM and the resolved scenario."""

    lp_text: str
    bom_csv: str
    resolved_scenario: dict


def compare_architectures(
    scenario: str | Path | None = None,
    catalog: Catalog | None = None,
    resolution: tuple[int, int, int] = DEFAULT_RESOLUTION,
    time_limit_s: float = 30.0,
    known: dict[str, dict] | None = None,
) -> dict:
    """`pdd-plan compare`: every architecture the scenario allows, each optimised alone.

    `known` maps an architecture to a `solve_scenario` result already computed for the same
    scenario, resolution and time limit; it is used as is instead of solving again.
    """
    catalog = catalog or Catalog()
    path = resolve_scenario_path(str(scenario) if scenario else None)
    s = load_scenario(path, catalog)
    out = []
    for arch in s.architectures:
        if known and arch in known:
            out.append({**known[arch], "architecture": arch})
            continue
        try:
            result, _ = solve_scenario(path, arch, catalog, resolution, time_limit_s)
        except InfeasibleError as exc:
            result = {
                "scenario": s.name,
                "status": "infeasible",
                "plan": None,
                "metrics": None,
                "architecture": arch,
                "reason": str(exc),
            }
        result["architecture"] = arch
        out.append(result)
    return {"scenario": s.name, "architectures": out}


# --- what each role carries ----------------------------------------------------------


def _pool_fields(pool) -> dict:
    g = pool.group
    return {
        "datacenter": g.datacenter,
        "gpu": g.gpu,
        "gpus_per_instance": g.gpus_per_instance,
        "instances": g.count,
    }


def _decode_entry(role, pool, load, rate, weights, tokens, context) -> dict:
    share = float(weights.sum())
    mass = float(np.dot(weights, tokens))
    return {
        "role": role,
        "stage": "decode",
        **_pool_fields(pool),
        "requests_per_s": rate * share,
        "tokens_per_request": mass / share if share else 0.0,
        "tokens_per_s": rate * mass,
        "mean_context_tokens": float(np.dot(weights, tokens * context)) / mass if mass else 0.0,
        "batch_per_instance": float(load.batch),
        "max_batch_hbm": int(load.max_batch),
        "tpot_batch_limit": int(pool.batch_limit),
        "step_s": float(load.step_s),
        "utilization_frac": float(load.utilization_frac),
    }


def role_arithmetic(setup: Setup, rate: float) -> list[dict] | None:
    """What each role carries at `rate`: the quantities `evaluate`'s snapshot computes on
    the way to its metrics (prefill time and queue per request, decode batch and step),
    by the same calls in the same order, so the utilisations are the metrics' own. None
    when a queue saturates at `rate`.

    Prefill utilisation is busy time; decode utilisation is the batch over the batch that
    fits HBM (what `evaluate` reports for decode roles).
    """
    c, routes, arch = setup.classes, setup.routes, setup.deployment.architecture
    context = c.input_tokens + c.output_tokens / 2
    try:
        service, p_wait, p_util = ev._prefill(setup, rate)
        wan_time = np.zeros(len(c))
        conn_wait = WaitModel.none()
        if setup.link is not None:
            wan, wan_time = ev._wan(setup, rate)
            conn_wait = wan.connection_wait
        remote = routes.path != rt.LOCAL if arch in ("pdd", "cdc_pd") else np.ones(len(c), bool)
        md_weights = c.weight * remote
        md_tokens = np.where(remote, c.output_tokens, 0.0)
        label = DECODE_ROLE[arch]
        md = ev._decode(setup.decode, rate, md_tokens, md_weights, context, label)
        relay_entry = None
        if setup.relay is not None:
            eager, rld_tokens, _, rld = ev._relay(setup, rate, wan_time + conn_wait.mean_s(), md)
            md_tokens = np.where(remote, np.maximum(c.output_tokens - eager, 0.0), 0.0)
            md = ev._decode(setup.decode, rate, md_tokens, md_weights, context, label)
            rld_weights = c.weight * ((routes.path == rt.RELAY) | (routes.path == rt.LOCAL))
            relay_entry = _decode_entry(
                "relay_decode", setup.relay, rld, rate, rld_weights, rld_tokens, context
            )
    except SaturatedError:
        return None
    mean_service = c.mean(service)
    prefill = {
        "role": PREFILL_ROLE[arch],
        "stage": "prefill",
        **_pool_fields(setup.prefill),
        "requests_per_s": rate,
        "mean_input_tokens": c.mean(c.input_tokens),
        "mean_cached_input_tokens": c.mean(c.cached_tokens),
        "mean_uncached_input_tokens": c.mean(c.uncached_tokens),
        "mean_prefill_s": mean_service,
        "mean_queue_wait_s": p_wait.mean_s(),
        "instance_capacity_rps": 1.0 / mean_service if mean_service > 0 else 0.0,
        "utilization_frac": float(p_util),
    }
    decode = _decode_entry(
        DECODE_ROLE[arch], setup.decode, md, rate, md_weights, md_tokens, context
    )
    if arch == "colocated":  # prefill steals time from the decode steps of the same instances
        decode["effective_step_s"] = decode["step_s"] / max(1e-9, 1.0 - p_util)
    return [e for e in (prefill, relay_entry, decode) if e is not None]


# --- the sizing report -----------------------------------------------------------------

HIT_RATE_MEANS = (0.7, 0.95)  # the report's other hit-rate cases
GPU_PRICE_FACTORS = (0.8, 1.2)
LINE_PRICE_FACTORS = (2.0,)
_HIT_RATE_POINTS = 256

HIT_RATE_RULE = (
    "The hit-rate distribution is moved to mean m by a monotone map of every request's hit "
    "rate h (mu is the scenario's mean): to raise it, each request's miss rate 1 - h is "
    "multiplied by (1 - m) / (1 - mu); to lower it, each hit rate is multiplied by m / mu. "
    "Rates stay in [0, 1], their order is kept, and any alternative mixes get the same map."
)


def _hit_points(d: Distribution) -> tuple[np.ndarray, np.ndarray]:
    values, weights = d.discretise(_HIT_RATE_POINTS)
    return np.asarray(values, float), np.asarray(weights, float) / np.sum(weights)


def hit_rate_mapper(d: Distribution, target_mean: float):
    """The map of HIT_RATE_RULE that takes `d`'s mean to `target_mean`."""
    values, weights = _hit_points(d)
    mu = float(np.dot(values, weights))
    if target_mean >= mu:
        k = (1.0 - target_mean) / (1.0 - mu) if mu < 1.0 else 1.0
        return lambda h: 1.0 - (1.0 - h) * k
    k = target_mean / mu if mu > 0.0 else 1.0
    return lambda h: h * k


def _mapped(d: Distribution, mapper) -> Empirical:
    values, weights = _hit_points(d)
    mapped = np.clip(mapper(values), 0.0, 1.0)
    return Empirical(tuple(float(v) for v in mapped), tuple(float(w) for w in weights))


def with_hit_rate_mean(s: Scenario, target_mean: float) -> Scenario:
    """`s` with its hit-rate distribution (and alternatives) moved as HIT_RATE_RULE says."""
    w = s.workload
    mapper = hit_rate_mapper(w.prefix_hit_rate, target_mean)
    workload = dataclasses.replace(
        w,
        prefix_hit_rate=_mapped(w.prefix_hit_rate, mapper),
        hit_rate_alternatives={k: _mapped(v, mapper) for k, v in w.hit_rate_alternatives.items()},
    )
    return dataclasses.replace(s, workload=workload)


def with_gpu_prices(s: Scenario, factor: float) -> Scenario:
    """Every GPU offer of every datacenter at `factor` times its price."""
    dcs = tuple(
        dataclasses.replace(
            dc,
            gpus=tuple(
                dataclasses.replace(o, price_usd_per_gpu_hour=factor * o.price_usd_per_gpu_hour)
                for o in dc.gpus
            ),
        )
        for dc in s.datacenters
    )
    return dataclasses.replace(s, datacenters=dcs)


def line_prices_usd_per_month(s: Scenario, catalog: Catalog) -> dict[str, float]:
    """The monthly price of every line tier the scenario may lease (overrides applied)."""
    return {
        t: s.wan.tier_price_usd_per_month.get(t, catalog.lines[t].price_usd_per_month)
        for t in s.wan.tiers
    }


def with_line_prices(s: Scenario, factor: float, catalog: Catalog) -> Scenario:
    prices = {t: factor * p for t, p in line_prices_usd_per_month(s, catalog).items()}
    return dataclasses.replace(s, wan=dataclasses.replace(s.wan, tier_price_usd_per_month=prices))


def sensitivity_cases(s: Scenario, catalog: Catalog) -> list[tuple[str, str, Scenario]]:
    """(case, what changed, scenario) for the report's other hit rates and prices."""
    mean = s.workload.prefix_hit_rate.mean()
    cases = [
        (
            f"hit rate {m:g}",
            f"mean prefix-hit rate {m:g} (scenario {mean:.3g})",
            with_hit_rate_mean(s, m),
        )
        for m in HIT_RATE_MEANS
    ]
    cases += [
        (f"GPU x{f:g}", f"every GPU price x{f:g}", with_gpu_prices(s, f)) for f in GPU_PRICE_FACTORS
    ]
    if any(arch in ("pdd", "cdc_pd") for arch in s.architectures):
        cases += [
            (f"line x{f:g}", f"every line price x{f:g}", with_line_prices(s, f, catalog))
            for f in LINE_PRICE_FACTORS
        ]
    return cases


def sensitivity(
    s: Scenario,
    architecture: str,
    catalog: Catalog,
    resolution: tuple[int, int, int] = DEFAULT_RESOLUTION,
    time_limit_s: float = 30.0,
) -> list[dict]:
    """Each case of `sensitivity_cases` solved: its status, plan and metrics."""
    out = []
    for case, change, variant in sensitivity_cases(s, catalog):
        entry = {"case": case, "change": change}
        try:
            result, _ = solve_loaded(variant, architecture, catalog, resolution, time_limit_s)
            entry.update(status=result["status"], plan=result["plan"], metrics=result["metrics"])
            if result["status"] == "infeasible":
                outcomes = dict.fromkeys(a["outcome"] for a in result["solver"]["policies_tried"])
                entry["reason"] = "no plan meets the SLA" + (
                    f" (policies tried: {'; '.join(outcomes)})" if outcomes else ""
                )
        except InfeasibleError as exc:
            entry.update(status="infeasible", plan=None, metrics=None, reason=str(exc))
        out.append(entry)
    return out


def explanation(
    s: Scenario,
    architecture: str,
    catalog: Catalog,
    resolution: tuple[int, int, int] = DEFAULT_RESOLUTION,
    time_limit_s: float = 30.0,
) -> dict | None:
    """`pdd_plan.plan.explain.explain` for the report's explain section (which limits of
    the MILP bind and what relaxing each is worth, each by a re-solve); None where that
    module is absent, and the section then carries what the solve result says."""
    try:
        from pdd_plan.plan.explain import explain
    except ImportError:
        return None
    return explain(
        s, catalog.model_for(s), catalog.gpus, catalog.lines, architecture, resolution,
        time_limit_s,
    )  # fmt: skip


def report_summary(s: Scenario, catalog: Catalog) -> dict:
    """`scenario validate`'s summary plus what the report also shows: the kinds of the
    distributions and the price and capacity of every line tier that may be leased."""
    summary = scenario_summary(s, catalog)
    summary["input_tokens_kind"] = s.workload.input_tokens.kind
    summary["output_tokens_kind"] = s.workload.output_tokens.kind
    summary["prefix_hit_rate_kind"] = s.workload.prefix_hit_rate.kind
    summary["line_prices_usd_per_month"] = line_prices_usd_per_month(s, catalog)
    summary["line_capacity_gbit_per_s"] = {
        t: catalog.lines[t].capacity_bits_per_s / GBIT_BITS for t in s.wan.tiers
    }
    return summary


def sizing_report_data(
    scenario: str | Path | None = None,
    architecture: str = "pdd",
    catalog: Catalog | None = None,
    resolution: tuple[int, int, int] = DEFAULT_RESOLUTION,
    time_limit_s: float = 30.0,
    solved: dict | None = None,
) -> tuple[Scenario, dict]:
    """Everything the sizing report shows, as plain dicts: the scenario summary, the
    solve result (`solved` if given, else solved here), every architecture compared, the
    sensitivity cases and the explanation."""
    catalog = catalog or Catalog()
    path = resolve_scenario_path(str(scenario) if scenario else None)
    s = load_scenario(path, catalog)
    if solved is None:
        solved, _ = solve_loaded(s, architecture, catalog, resolution, time_limit_s)
    data = {
        "version": __version__,
        "architecture": architecture,
        "summary": report_summary(s, catalog),
        "result": solved,
        "compare": compare_architectures(
            path, catalog, resolution, time_limit_s, known={architecture: solved}
        ),
        "sensitivity": {
            "hit_rate_rule": HIT_RATE_RULE,
            "cases": sensitivity(s, architecture, catalog, resolution, time_limit_s),
        },
        "explanation": explanation(s, architecture, catalog, resolution, time_limit_s),
    }
    return s, data


def sizing_report(
    scenario: str | Path | None = None,
    architecture: str = "pdd",
    catalog: Catalog | None = None,
    resolution: tuple[int, int, int] = DEFAULT_RESOLUTION,
    time_limit_s: float = 30.0,
    solved: dict | None = None,
) -> str:
    """`pdd-plan solve --report`: the sizing report as Markdown."""
    from pdd_plan.report.markdown import render_report

    s, data = sizing_report_data(scenario, architecture, catalog, resolution, time_limit_s, solved)
    return render_report(s, data)


def explain_scenario(
    scenario: str | Path | None = None,
    architecture: str = "pdd",
    catalog: Catalog | None = None,
    resolution: tuple[int, int, int] = DEFAULT_RESOLUTION,
    time_limit_s: float = 30.0,
) -> dict:
    """`pdd-plan explain`: binding limits of the best plan, what relaxing each is worth,
    pruned candidates, the binding role. Raises InfeasibleError with the shortfall."""
    from pdd_plan.plan.explain import explain

    catalog = catalog or Catalog()
    s = load_scenario(resolve_scenario_path(str(scenario) if scenario else None), catalog)
    model = catalog.model_for(s)
    return explain(s, model, catalog.gpus, catalog.lines, architecture, resolution, time_limit_s)


def infeasibility_reason(
    scenario: str | Path | None,
    architecture: str,
    solved: dict,
    catalog: Catalog | None = None,
    resolution: tuple[int, int, int] = DEFAULT_RESOLUTION,
    time_limit_s: float = 30.0,
) -> str:
    """Why `solve_scenario` found no plan (its `solved` result), as one line: the limit
    that cannot be met and by how much (elastic re-solve), else the policies tried."""
    from pdd_plan.plan.candidates import default_policy
    from pdd_plan.plan.elastic import infeasible_message
    from pdd_plan.plan.solve import Attempt

    catalog = catalog or Catalog()
    s = load_scenario(resolve_scenario_path(str(scenario) if scenario else None), catalog)
    base = default_policy(s)
    attempts = [
        Attempt(
            dataclasses.replace(
                base, rld_hit_threshold=a["rld_hit_threshold"], handoff=a["handoff"]
            ),
            a["utilization_cap_frac"],
            a["outcome"],
        )
        for a in solved["solver"]["policies_tried"]
    ]
    return infeasible_message(
        s, catalog.model_for(s), catalog.gpus, catalog.lines, architecture, attempts,
        resolution, time_limit_s,
    )  # fmt: skip
