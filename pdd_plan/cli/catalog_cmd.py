"""`pdd-plan catalog list|show`: the GPUs and WAN line tiers the planner can buy."""

from __future__ import annotations

import typer

from pdd_plan.cli.output import FORMAT_HELP, Format, print_structured, table
from pdd_plan.errors import InputError

app = typer.Typer(help="GPUs and WAN line tiers of the hardware catalog.", no_args_is_help=True)
FORMAT = typer.Option(Format.table, "--format", help=FORMAT_HELP)


@app.command("list")
def list_entries(format: Format = FORMAT) -> None:
    """List every GPU and line tier with its headline figures."""
    from pdd_plan.loaders.catalog import Catalog  # the catalog loads when a command runs
    from pdd_plan.report import views

    data = views.catalog_listing(Catalog())
    if format.structured:
        print_structured(data, format)
        return
    table(
        "GPUs",
        [
            "id",
            "BF16 TFLOP/s",
            "FP8 TFLOP/s",
            "HBM GiB",
            "HBM TB/s",
            "GPUs/node",
            "$/GPU-h",
            "assumed / low-confidence fields",
        ],
        [
            [
                g["id"],
                g["bf16_dense_tflop_per_s"],
                g["fp8_dense_tflop_per_s"],
                g["hbm_gib"],
                g["hbm_tbyte_per_s"],
                g["gpus_per_node"],
                g["rental_usd_per_gpu_hour"],
                len(g["assumed_or_low_confidence"]),
            ]
            for g in data["gpus"]
        ],
        caption="`pdd-plan catalog show ID` gives every field with its source",
    )
    table(
        "WAN line tiers",
        ["id", "kind", "Gbit/s", "$/month", "install $", "basis"],
        [
            [
                t["id"],
                t["kind"],
                t["capacity_gbit_per_s"],
                t["price_usd_per_month"],
                t["install_usd"],
                t["basis"],
            ]
            for t in data["lines"]
        ],
    )


@app.command("show")
def show(
    entry_id: str = typer.Argument(..., metavar="ID", help="a GPU or line-tier id"),
    format: Format = FORMAT,
) -> None:
    """Show one GPU or line tier, every figure with its source and basis."""
    from pdd_plan.loaders.catalog import Catalog
    from pdd_plan.loaders.strict import did_you_mean
    from pdd_plan.report import views

    catalog = Catalog()
    if entry_id in catalog.gpus:
        data = views.gpu_detail(catalog.gpus[entry_id])
        if format.structured:
            print_structured(data, format)
            return
        rows = [
            [k, v["value"], v["basis"], v["source"], v["note"]] for k, v in data["fields"].items()
        ]
        table(f"{data['name']} ({data['id']})", ["field", "value", "basis", "source", "note"], rows)
        return
    if entry_id in catalog.lines:
        data = views.line_summary(catalog.lines[entry_id])
        if format.structured:
            print_structured(data, format)
            return
        table(
            f"{data['name']} ({data['id']})", ["field", "value"], [[k, v] for k, v in data.items()]
        )
        return
    known = list(catalog.gpus) + list(catalog.lines)
    raise InputError.single(
        "catalog",
        "ID",
        repr(entry_id),
        "a GPU or line-tier id",
        did_you_mean(entry_id, known) or "see `pdd-plan catalog list`",
    )
