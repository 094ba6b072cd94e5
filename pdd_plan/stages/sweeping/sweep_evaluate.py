"""A sweep point that evaluates a plan file (`pdd-plan sweep --plan`): `evaluate`'s result
for the edited scenario and its status. Split from sweep.py; sweep re-exports both."""

from __future__ import annotations

from pdd_plan.loaders.catalog import Catalog


def evaluate_loaded(s, plan_path: str, catalog: Catalog, resolution) -> dict:
    """`pdd-plan evaluate`'s result for a scenario already loaded (edited)."""
    from pdd_plan.errors import naming_file
    from pdd_plan.loaders.engine_profile import profile_summary
    from pdd_plan.loaders.plan_file import load_plan
    from pdd_plan.model.deployment_json import plan_json
    from pdd_plan.model.evaluate import evaluate, prepare

    deployment = load_plan(plan_path, s, catalog)
    model = catalog.model_for(s)
    with naming_file("plan", str(plan_path)):  # the model's refusals of a plan name its file
        setup = prepare(s, deployment, model, catalog.gpus, catalog.lines, resolution)
        metrics, snap = evaluate(setup)
    out = {"status": "evaluated", "plan": plan_json(deployment), "metrics": metrics.to_json()}
    out["metrics"]["engine_profile"] = profile_summary(s.engine.profile)  # as evaluate's (#13)
    saturation = None
    if snap is None:
        from pdd_plan.stages.solving.saturation import saturation_of

        saturation = saturation_of(setup, metrics.offered_rps, metrics.goodput_rps)
    out["status"], out["error"] = evaluated_status(out["metrics"], saturation)
    return out


def evaluated_status(metrics: dict, saturation: dict | None) -> tuple[str, str | None]:
    """A plan evaluated at a point: `evaluated` only when it meets the SLA there (#14
    item 11); `saturated` or `sla_missed` count as failed points, with the reason."""
    if saturation is not None:
        return "saturated", (f"{saturation['first']} (the plan carries "
                             f"{metrics['goodput_rps']:.3g} req/s within the SLA)")  # fmt: skip
    if not metrics["sla_met"]:
        missed = [f"{k} {v['value']:.3g} > {v['limit']:.3g}"
                  for k, v in metrics["sla_checks"].items() if v["value"] > v["limit"]]  # fmt: skip
        return "sla_missed", "SLA missed: " + ", ".join(missed)
    return "evaluated", None
