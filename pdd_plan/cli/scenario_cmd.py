"""`pdd-plan scenario validate|template`."""

from __future__ import annotations

import typer

from pdd_plan.cli.output import FORMAT_HELP, Format, console, print_structured, safe, table
from pdd_plan.cli.prices_opt import prices_option, use_prices

app = typer.Typer(help="Check scenario files; print a documented template.", no_args_is_help=True)


@app.command("validate")
def validate(
    scenario: str = typer.Argument(
        None, help="a scenario file or shipped name (default: the embedded default)"
    ),
    prices: str | None = prices_option(),
    format: Format = typer.Option(Format.table, "--format", help=FORMAT_HELP),
) -> None:
    """Check a scenario strictly and summarise it; every problem is reported at once."""
    use_prices(prices)  # a price file is checked against the scenario too
    from pdd_plan.loaders.catalog import Catalog  # the catalog loads when a command runs
    from pdd_plan.loaders.scenario import load_scenario, resolve_scenario_path
    from pdd_plan.report import views

    catalog = Catalog()
    s = load_scenario(resolve_scenario_path(scenario), catalog)
    d = views.scenario_summary(s, catalog)
    if format.structured:
        print_structured({"valid": True, "scenario": d}, format)
        return
    console.print(f"[green]valid[/]: {safe(d['file'])} ({safe(d['name'])})")
    table(
        "Workload",
        [
            "model",
            "KV B/token",
            "req/s",
            "burstiness c²",
            "mean input",
            "mean output",
            "mean hit rate",
        ],
        [
            [
                d["model"],
                f"{d['kv_bytes_per_token']:,.0f} ({d['kv_dtype']})",
                d["arrival_rate_per_s"],
                d["burstiness_cv2"],
                d["mean_input_tokens"],
                d["mean_output_tokens"],
                d["mean_prefix_hit_rate"],
            ]
        ],
    )
    table(
        "Datacenters",
        ["id", "roles", "GPUs ($/GPU-h, max)"],
        [
            [
                dc["id"],
                ", ".join(dc["roles"]),
                "; ".join(
                    f"{g['gpu']} ${g['price_usd_per_gpu_hour']:.2f}, {g['max_gpus'] or 'no limit'}"
                    for g in dc["gpus"]
                ),
            ]
            for dc in d["datacenters"]
        ],
    )
    sla = ", ".join(
        [f"TTFT {p} <= {v:g} s" for p, v in d["sla"]["ttft_s"].items()]
        + [f"TPOT {p} <= {v * 1e3:g} ms" for p, v in d["sla"]["tpot_s"].items()]
    )
    console.print(
        f"SLA: {sla}; objective {d['objective']}; architectures {', '.join(d['architectures'])}"
    )
    for arch, where in d["placements"].items():
        console.print(f"  {arch}: {safe(where)}")
    if "load_curve" in d:
        from pdd_plan.report.curve_view import curve_line

        console.print(safe(curve_line(d["load_curve"])))


@app.command("template")
def template() -> None:
    """Print a documented scenario template (every key, with its unit and default)."""
    from pdd_plan.loaders.scenario import scenarios_dir

    typer.echo((scenarios_dir() / "template.yaml").read_text(encoding="utf-8"), nl=False)
