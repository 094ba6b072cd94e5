"""One sourced catalog figure, `{value, source, basis, note}`, strictly: the form every
number of the GPU, line, cache-tier, node and line-end files takes (hardware_catalog/README)."""

from __future__ import annotations

from pdd_plan.loaders.strict import Node, did_you_mean
from pdd_plan.model.compute.hardware import BASES, Sourced


def sourced(
    node: Node,
    sources: set[str],
    required: bool,
    integer: bool = False,
    fraction: bool = False,
    allow_zero: bool = False,
    floor: float = 0.0,
    maximum: float | None = None,
) -> Sourced | None:
    """A `{value, source, basis, note}` figure; a missing source is a problem, always.
    `floor`: the least value that is physical (default: anything above 0)."""
    f = node.mapping(required=("value", "source"), optional=("basis", "note"))
    if f is None:
        return None
    maximum = maximum or (1.0 if fraction else 1e9)
    value = f["value"].number(
        minimum=floor,
        exclusive_minimum=not allow_zero and not floor,
        maximum=maximum,
        integer=integer,
        required=required,
    )
    source = f["source"].string(required=True)
    if source is not None and source not in sources:
        f["source"].fail("a key of sources.yaml", did_you_mean(source, sources))
    basis = f["basis"].choice(BASES, default="published")
    note = f["note"].string(default="")
    needs_note = basis in ("derived", "assumed", "low_confidence") or f["value"].value is None
    if needs_note and not note:
        f["note"].fail(
            f"a note explaining the {basis if f['value'].value is not None else 'null'} value"
        )
    return Sourced(value, source or "", basis or "published", note or "")
