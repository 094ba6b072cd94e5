"""`pdd-plan schema scenario|plan [-o FILE]`: the JSON Schema of a scenario or plan file."""

from __future__ import annotations

import typer

from pdd_plan.cli.output import console, safe
from pdd_plan.cli.output_formats import JSON, formats
from pdd_plan.cli.output_paths import check_outputs
from pdd_plan.loaders.file_schemas import KINDS, file_schema, schema_text
from pdd_plan.report.files import standard_stream, write_atomic

JSON_ONLY = formats(JSON)


def schema(
    kind: str = typer.Argument(..., help=f"the file it describes: {' or '.join(KINDS)}"),
    output: str = typer.Option(
        None, "--output", "-o", help="write it here (x.json; - for stdout) instead of printing"
    ),
) -> None:
    """Print the JSON Schema of a scenario or plan file, for the tools that write or read them.

    Draft 2020-12, its `$id` and `x-pdd-plan-version` naming this pdd-plan's version. It
    states the keys, types, units, enums and bounds the loader checks; what only the loader
    checks (ids in the catalog, shares summing to 1, a plan against its scenario) is listed
    in docs/schemas.md. `scenario validate` and `evaluate` stay the final word on a file.
    """
    file_schema(kind)  # an unknown kind: one line, exit 2, before any output is checked
    check_outputs(files={"--output": output}, formats={"--output": JSON_ONLY})
    text = schema_text(kind)
    if output is None:
        typer.echo(text, nl=False)
        return
    write_atomic(output, text)
    if standard_stream(output) is None:  # `-o -`: the schema alone on stdout
        console.print(f"wrote {safe(output)}")
