"""JSON Schemas (draft 2020-12) of the files pdd-plan reads, for the tools that write or
read them: a scenario and a plan file (`pdd-plan schema scenario|plan`).

The schemas are hand-written JSON shipped beside this module (schemas/*.schema.json): the
loaders check their keys in code, not from a table a schema could be generated from, and a
published contract is best reviewed as the text it is. Each is stamped here with its `$id`
and the tool's version, so a schema always names the pdd-plan whose loader it describes.
The loader stays the authority: tests/unit/test_schema_*.py hold each schema to it
(keys, required keys, enums, bounds, types), and docs/schemas.md lists the rules only the
loader checks (ids in the catalog, sums, orders, one file against another).
"""

from __future__ import annotations

import json
from importlib import resources

from pdd_plan import __version__
from pdd_plan.errors import InputError
from pdd_plan.loaders.suggest import did_you_mean

KINDS = ("scenario", "plan")
ID_PREFIX = "urn:pdd-plan:schema"  # a name, not a URL: the schemas are served by no site
VERSION_KEY = "x-pdd-plan-version"


def schema_id(kind: str, version: str = __version__) -> str:
    return f"{ID_PREFIX}:{kind}:{version}"


def file_schema(kind: str) -> dict:
    """The schema of one kind of file, stamped with its `$id` and the tool's version;
    an unknown kind is an InputError naming the kinds."""
    if kind not in KINDS:
        raise InputError.single(
            "command line", "KIND", repr(kind), f"one of {', '.join(KINDS)}",
            did_you_mean(kind, KINDS),
        )  # fmt: skip
    text = (
        resources.files(__package__)
        .joinpath("schemas", f"{kind}.schema.json")
        .read_text(encoding="utf-8")
    )
    body = json.loads(text)
    stamp = {"$schema": body.pop("$schema"), "$id": schema_id(kind), VERSION_KEY: __version__}
    return stamp | body


def schema_text(kind: str) -> str:
    """The schema as `pdd-plan schema` prints it: JSON, two-space indent, one newline."""
    return json.dumps(file_schema(kind), indent=2, ensure_ascii=False) + "\n"
