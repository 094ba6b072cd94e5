"""The resolved scenario (every default filled in, SI units) as JSON, for `--out`."""

from __future__ import annotations

import dataclasses

from pdd_plan.model.scenario import Scenario


def _plain(value):
    if dataclasses.is_dataclass(value):
        out = {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
        if hasattr(value, "kind"):
            out["kind"] = value.kind
        return out
    if isinstance(value, dict):
        return {
            "-".join(k) if isinstance(k, tuple) else str(k): _plain(v) for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def scenario_json(scenario: Scenario) -> dict:
    """All fields in SI units (seconds, bits/s, USD/h): the names say which."""
    return {"units": "SI (seconds, bits per second, watts, USD)", **_plain(scenario)}
