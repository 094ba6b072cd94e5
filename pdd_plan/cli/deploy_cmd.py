"""`pdd-plan deploy PLAN --target dynamo|llm-d|k8s -o DIR`: the files that run a plan."""

from __future__ import annotations

import typer

from pdd_plan.cli.output import console
from pdd_plan.cli.output_paths import check_outputs
from pdd_plan.errors import visible


def deploy(
    plan: str = typer.Argument(..., help="a plan file (YAML with the `plan` keys, or plan.json)"),
    target: str = typer.Option(..., "--target", "-t", help="dynamo, llm-d or k8s"),
    out: str = typer.Option(
        ...,
        "--out",
        "-o",
        help="write the folder DIR (new or empty; replaced whole): one folder per datacenter "
        "with its manifests and router-policy.yaml, and README.txt listing them",
    ),
    scenario: str | None = typer.Option(
        None,
        "--scenario",
        help="the scenario the plan was sized for (default: scenario.json beside PLAN, as "
        "`solve --out` writes it)",
    ),
    engine: str = typer.Option("vllm", "--engine", help="vllm or sglang (llm-d: vllm)"),
    image: str | None = typer.Option(
        None, "--image", help="the engine image (default: the pinned one each file states)"
    ),
    model_ref: str | None = typer.Option(
        None, "--model-ref", help="the model as the engine loads it (default: its repository id)"
    ),
) -> None:
    """Write the manifests that run a plan on Dynamo, llm-d or plain Kubernetes.

    Per datacenter: the instances of each role with their GPUs, parallelism and engine
    flags, and the router's policy as a ConfigMap; every file is checked against the
    target's vendored schema before any is written. What the target cannot express (the
    relay decode's routing, the handoff, the datacenters joined over the line) is said in
    the files and on stderr, one line each."""
    from pdd_plan.stages.deploying.deploy_service import check_choice, deploy_files, scenario_for

    check_choice(target, engine)
    scenario_path = scenario_for(plan, scenario)
    check_outputs([plan, scenario_path], {}, {"--out": out})
    bundle = deploy_files(
        plan, target, scenario=str(scenario_path), engine=engine, image=image, model_ref=model_ref
    )
    from pdd_plan.report.files import write_folder

    write_folder(out, bundle.files)
    for gap in bundle.gaps:
        typer.echo(visible(f"not expressed by {target}: {gap.text}"), err=True)
    shown = len(bundle.files) - 1
    console.print(f"wrote {shown} manifest files and README.txt to {out}", markup=False)
