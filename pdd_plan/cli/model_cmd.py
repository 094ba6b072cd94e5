"""`pdd-plan model list|show|import`: models, their KV bytes, weights and FLOPs."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from pdd_plan.cli.bounds import MAX_TOKENS, bounded, check_id_option, id_from_text
from pdd_plan.cli.output import FORMAT_HELP, Format, console, print_structured, safe, table
from pdd_plan.cli.output_formats import CATALOG_ENTRY, JSON, named_extension
from pdd_plan.cli.output_paths import check_outputs
from pdd_plan.errors import InputError
from pdd_plan.model.units import DTYPE_BYTES, format_bytes, format_count
from pdd_plan.report.files import write_atomic

app = typer.Typer(
    help="Models of the catalog: KV bytes, weights, FLOPs; import HF configs.", no_args_is_help=True
)
FORMAT = typer.Option(Format.table, "--format", help=FORMAT_HELP)


def _dtype(value: str | None, option: str) -> str | None:
    if value is not None and value not in DTYPE_BYTES:
        from pdd_plan.loaders.strict import did_you_mean

        raise InputError.single(
            "command line",
            option,
            repr(value),
            f"one of {', '.join(DTYPE_BYTES)}",
            did_you_mean(value, DTYPE_BYTES),
        )
    return value


@app.command("list")
def list_models(
    kv_dtype: str = typer.Option("bf16", "--kv-dtype"), format: Format = FORMAT
) -> None:
    """List the catalog's models with parameters and KV bytes per token."""
    from pdd_plan.loaders.catalog import Catalog  # the catalog loads when a command runs
    from pdd_plan.report import views

    _dtype(kv_dtype, "--kv-dtype")
    catalog = Catalog()
    data = [views.model_summary(catalog.model(m), kv_dtype) for m in catalog.model_ids()]
    if format.structured:
        print_structured(data, format)
        return
    table(
        "Models",
        [
            "id",
            "architecture",
            "layers",
            "params",
            "active",
            f"KV B/token ({kv_dtype})",
            "fixed state / request",
        ],
        [
            [
                d["id"],
                d["architecture"],
                d["layers"],
                format_count(d["total_params"]),
                format_count(d["active_params"]),
                f"{d['kv_bytes_per_token']:,.0f}",
                format_bytes(d["fixed_state_bytes"]) if d["fixed_state_bytes"] else "-",
            ]
            for d in data
        ],
    )


@app.command("show")
def show(
    model_id: str = typer.Argument(..., metavar="MODEL"),
    kv_dtype: str = typer.Option("bf16", "--kv-dtype", help="dtype of the KV cache"),
    weight_dtype: str = typer.Option(None, "--weight-dtype", help="override the native dtype"),
    context: int = bounded(
        65536, "--context", low=1, high=MAX_TOKENS, help="context for the FLOPs per token"
    ),
    format: Format = FORMAT,
) -> None:
    """KV bytes per token by layer type, KV per request, weights and FLOPs per token."""
    from pdd_plan.loaders.catalog import Catalog
    from pdd_plan.report import views

    _dtype(kv_dtype, "--kv-dtype")
    _dtype(weight_dtype, "--weight-dtype")
    model = Catalog().model(model_id)
    d = views.model_detail(model, kv_dtype, weight_dtype, context)
    if format.structured:
        print_structured(d, format)
        return
    console.print(
        f"[bold]{safe(model.name)}[/] ({model.id}), {model.architecture}, {d['layers']} layers"
        f"{f' + {model.mtp_layers} MTP' if model.mtp_layers else ''}; source: {safe(model.source)}"
    )
    console.print(
        f"parameters {format_count(d['total_params'])} total, "
        f"{format_count(d['active_params'])} active; weights {format_bytes(d['weight_bytes'])}"
        f" ({d['weight_dtype']} dense, {d['expert_weight_dtype']} experts)"
    )
    table(
        f"KV cache ({kv_dtype})",
        ["layer term", "layers", "bytes/token", "window bytes", "fixed bytes"],
        [
            [
                r["category"],
                r["layers"],
                f"{r['bytes_per_token']:,.1f}",
                f"{r['window_bytes']:,.0f}",
                f"{r['fixed_bytes']:,.0f}",
            ]
            for r in d["kv_breakdown"]
        ],
        caption=f"total {d['kv_bytes_per_token']:,.1f} B/token in the long-context limit; "
        f"shipped {d['shipped_kv_bytes_per_token']:,.1f} B/token ({d['shipped_kv_source']})",
    )
    table(
        "KV per request",
        ["tokens", "bytes", ""],
        [
            [f"{int(n):,}", f"{b:,.0f}", format_bytes(b)]
            for n, b in d["kv_bytes_per_request"].items()
        ],
    )
    console.print(
        f"FLOPs per token at {context:,} tokens of context: prefill "
        f"{format_count(d['prefill_flop_per_token'])}, decode "
        f"{format_count(d['decode_flop_per_token'])}"
    )
    if model.notes:
        console.print(f"notes: {safe(model.notes)}")


def _entry_as_json(output: Path | None, format: Format, named: str | None) -> bool:
    """JSON or YAML: as the -o file's extension names it, else as --format asks (JSON
    for json, the catalog's YAML for table and yaml); a --format that contradicts the
    extension is refused, since one of the two would be ignored."""
    if output is None or not named_extension(str(output)):
        return format is Format.json
    if format.structured and format.value.upper() != named:
        raise InputError.single(
            str(output), "--output", f"a {named} file name with --format {format.value}",
            f"a name ending {CATALOG_ENTRY.extensions[format.value.upper()][0]} for "
            f"--format {format.value}, or no --format (the extension chooses)",
        )  # fmt: skip
    return named == JSON


@app.command("import")
def import_config(
    config: Path = typer.Argument(..., help="a Hugging Face config.json"),
    model_id: str = typer.Option(None, "--id", help="catalog id (default: from name)"),
    name: str = typer.Option(None, "--name", help="display name (default: file stem)"),
    source: str = typer.Option(None, "--source", help="where the config came from"),
    output: Path = typer.Option(
        None, "--output", "-o", help="write the entry here: x.yaml YAML, x.json JSON"
    ),
    format: Format = FORMAT,
) -> None:
    """Turn a Hugging Face config.json into a catalog entry (printed, or written with -o)."""
    import yaml

    from pdd_plan.loaders.hf_config import import_hf_config
    from pdd_plan.loaders.model_file import model_from_dict
    from pdd_plan.loaders.strict import load_yaml

    check_id_option("--id", model_id)
    chosen = check_outputs([config], {"--output": output}, formats={"--output": CATALOG_ENTRY})
    as_json = _entry_as_json(output, format, chosen.get("--output"))
    data = load_yaml(config, "a Hugging Face config.json")  # JSON is YAML
    name = name or config.stem.removesuffix("_config")
    model_id = model_id or id_from_text(name)
    entry = import_hf_config(data, str(config), model_id, name, source or str(config))
    model_from_dict(entry, str(config))  # the entry must load back
    if as_json:
        text = json.dumps(entry, indent=2) + "\n"
    else:  # the catalog's own form
        text = f"# Imported by `pdd-plan model import` from {config.name}\n" + yaml.safe_dump(
            entry, sort_keys=False, default_flow_style=None, width=100
        )
    if output:
        write_atomic(output, text)
        if str(output) != "-":  # `-o -` is the entry itself on stdout
            console.print(f"wrote {safe(output)}")
    else:
        typer.echo(text, nl=False)
