"""The plans of the sizing report's cost against TTFT P99 plot: every distinct plan met on
the way (the optimum, the other architectures', the plans of the price cases, the optimum
with one instance more or fewer in one role or one line more), each evaluated once on the
scenario itself, in the report's pool (report_build.py)."""

from __future__ import annotations

import json
from concurrent.futures import Future

from pdd_plan.errors import PddPlanError
from pdd_plan.loaders.catalog import Catalog
from pdd_plan.model.deployment import Deployment, InstanceGroup, LineLease, RoutingPolicy
from pdd_plan.model.evaluate import evaluate, prepare
from pdd_plan.plan.scenario_edit import edited
from pdd_plan.report.bom_items import cache_buy
from pdd_plan.stages.sweeping import sweep as sw


def deployment_from_json(plan: dict, catalog: Catalog) -> Deployment:
    """The inverse of `report.deployment_json.plan_json` for a plan this tool wrote."""
    p = plan["policy"]
    return Deployment(
        plan["architecture"],
        tuple(InstanceGroup(g["role"], g["datacenter"], g["gpu"], g["gpus_per_instance"],
                            g["count"]) for g in plan["instances"]),
        tuple(LineLease(x["tier"], catalog.lines[x["tier"]].capacity_bits_per_s, x["count"])
              for x in plan["lines"]),
        # the cache tier the plan bought: without it a neighbour is another plan
        RoutingPolicy(p["rld_hit_threshold"], p["handoff"], p["short_output_cutoff"],
                      cache_buy(plan.get("decode_cache"))),
    )  # fmt: skip


def evaluate_plan(data: dict, label: str, plan: dict, resolution) -> dict | None:
    """The metrics of `plan` on the scenario `data`; None when a queue saturates. Runs in
    a worker process."""
    catalog = sw.worker_catalog()
    s, _ = edited(data, {}, label, catalog)
    model = catalog.model_for(s)
    try:
        setup = prepare(s, deployment_from_json(plan, catalog), model, catalog.gpus,
                        catalog.lines, resolution)  # fmt: skip
        metrics, _ = evaluate(setup)
    except PddPlanError:
        return None
    return metrics.to_json()


def neighbours(plan: dict) -> list[tuple[str, dict]]:
    """The plan with one instance more or fewer in one group, or one line more."""
    out = []
    for i, g in enumerate(plan["instances"]):
        for step in (1, -1):
            if g["count"] + step < 1:
                continue
            instances = [dict(x) for x in plan["instances"]]
            instances[i]["count"] += step
            out.append((f"{g['role']} {step:+d}", {**plan, "instances": instances}))
    for i, line in enumerate(plan["lines"]):
        lines = [dict(x) for x in plan["lines"]]
        lines[i]["count"] += 1
        out.append((f"line {line['tier']} +1", {**plan, "lines": lines}))
    return out


def plan_key(plan: dict) -> str:
    return json.dumps(plan, sort_keys=True)


class Evaluator:
    """Distinct plans evaluated once each, in the pool; plans already evaluated on the
    scenario (the optimum, the other architectures) are taken as they are."""

    def __init__(self, pool, data: dict, label: str, resolution):
        self.pool, self.data, self.label, self.resolution = pool, data, label, resolution
        self.entries: dict[str, dict] = {}
        self.early: dict[str, Future] = {}  # plan key -> its evaluation, started early

    def add_known(self, label: str, result: dict) -> None:
        if result.get("plan") and result.get("metrics"):
            key = plan_key(result["plan"])
            self.entries.setdefault(key, {"label": label, "plan": result["plan"],
                                          "metrics": result["metrics"]})  # fmt: skip

    def prefetch(self, plan: dict) -> None:
        """Evaluate `plan` now (unless known or started); `submit`, called in the plot's
        order (which labels it), takes the evaluation."""
        key = plan_key(plan)
        if key not in self.early and key not in self.entries:
            self.early[key] = self.pool.submit(evaluate_plan, self.data, self.label, plan,
                                               self.resolution)  # fmt: skip

    def submit(self, label: str, plan: dict) -> None:
        key = plan_key(plan)
        if key not in self.entries:
            future = self.early.get(key) or self.pool.submit(
                evaluate_plan, self.data, self.label, plan, self.resolution
            )
            self.entries[key] = {"label": label, "plan": plan, "future": future}

    def results(self) -> list[dict]:
        out = []
        for e in self.entries.values():
            if "future" in e:  # (kept: `results` may be asked again as plans join)
                try:
                    metrics = e["future"].result()
                except Exception:  # a worker that died: the plan is left out of the plot
                    continue
                e = {k: v for k, v in e.items() if k != "future"} | {"metrics": metrics}
            if e["metrics"] is not None:
                out.append(e)
        return out
