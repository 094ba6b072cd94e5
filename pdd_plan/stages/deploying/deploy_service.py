"""`pdd-plan deploy PLAN --target T`: the plan read as `evaluate` reads it, sized by the
model, written as the target's manifests (report/manifests/).

The scenario is `--scenario`, else the scenario.json beside the plan (what `solve --out
DIR` writes next to plan.json); a plan file alone does not say which scenario sized it."""

from __future__ import annotations

from pathlib import Path

from pdd_plan.errors import InputError, naming_file
from pdd_plan.loaders.catalog import Catalog
from pdd_plan.loaders.plan_file import load_plan
from pdd_plan.loaders.scenario import load_scenario, resolve_scenario_path
from pdd_plan.loaders.suggest import did_you_mean
from pdd_plan.model.setup import prepare
from pdd_plan.report.manifests.bundle import Bundle, build
from pdd_plan.report.manifests.common import Settings
from pdd_plan.report.manifests.engine_args import model_reference
from pdd_plan.report.manifests.shapes import group_shapes
from pdd_plan.report.manifests.versions import ENGINES, TARGETS

BESIDE = "scenario.json"


def scenario_for(plan: str | Path, scenario: str | None) -> Path:
    """The scenario file: named, or the one `solve --out` wrote beside the plan."""
    if scenario is not None:
        return resolve_scenario_path(scenario)
    beside = Path(plan).parent / BESIDE
    if beside.is_file():
        return beside
    raise InputError.single(
        "command line",
        "--scenario",
        f"none given and no {BESIDE} beside {plan}",
        "the scenario the plan was sized for (a file or shipped name)",
    )


def check_choice(target: str, engine: str) -> None:
    """Refuse an unknown target or engine, or one the target's image does not run."""
    if target not in TARGETS:
        raise InputError.single(
            "command line",
            "--target",
            repr(target),
            f"one of {', '.join(TARGETS)}",
            did_you_mean(target, TARGETS),
        )
    if engine not in ENGINES:
        raise InputError.single(
            "command line",
            "--engine",
            repr(engine),
            f"one of {', '.join(ENGINES)}",
            did_you_mean(engine, ENGINES),
        )
    if engine not in TARGETS[target].images:
        runs = ", ".join(TARGETS[target].images)
        raise InputError.single(
            "command line",
            "--engine",
            repr(engine),
            f"{runs} for --target {target} (its chart runs no other)",
        )


def deploy_files(
    plan: str | Path,
    target: str,
    *,
    scenario: str | None = None,
    engine: str = "vllm",
    image: str | None = None,
    model_ref: str | None = None,
    catalog: Catalog | None = None,
) -> Bundle:
    """The files of `target` that run `plan` (validated), and what it cannot express."""
    check_choice(target, engine)
    catalog = catalog or Catalog()
    s = load_scenario(scenario_for(plan, scenario), catalog)
    deployment = load_plan(plan, s, catalog)
    model = catalog.model_for(s)
    with naming_file("plan", str(plan)):
        setup = prepare(s, deployment, model, catalog.gpus, catalog.lines)
    settings = Settings(
        TARGETS[target],
        engine,
        image or TARGETS[target].images[engine],
        model_ref or model_reference(model),
        s.kv_dtype,
        deployment.architecture,
    )
    return build(settings, deployment, s, group_shapes(setup, catalog.gpus), str(plan))
