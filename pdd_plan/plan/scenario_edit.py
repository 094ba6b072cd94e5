"""Scenario edits by dotted key path, as `pdd-plan sweep --vary KEY=...` names them.

A key is a path into the scenario YAML: mapping keys and list indices joined by dots
(`workload.arrival_rate_per_s`, `datacenters.0.gpus.1.price_usd_per_gpu_hour`,
`wan.tier_prices_usd_per_month.wave_10g`). A key the file leaves out but the scenario
format allows (an optional price, a tier override) is created. Two keys are not in the file
format: `workload.prefix_hit_rate.mean` (HIT_MEAN_KEY) moves the loaded hit-rate
distribution to that mean by the sizing report's rule (`pdd_plan.plan.variants.HIT_RATE_RULE`), and
`architecture` (ARCH_KEY) is the architecture to plan.

An edited scenario is loaded by the same strict loader as a file, so a value out of range
is reported exactly as it would be in the file.
"""

from __future__ import annotations

import copy
import dataclasses
import os
import tempfile
from pathlib import Path
from typing import Any

import yaml

from pdd_plan.errors import InputError
from pdd_plan.loaders.catalog import Catalog
from pdd_plan.loaders.scenario import load_scenario
from pdd_plan.loaders.strict import describe, did_you_mean
from pdd_plan.model.scenario import Scenario
from pdd_plan.plan.variants import (  # the report's rule, defined once
    HIT_MEAN_KEY,
    with_hit_rate_mean,
)

ARCH_KEY = "architecture"  # not a scenario key: the architecture to plan (solve's --architecture)
WHERE = "command line"
# libyaml's emitter when PyYAML has it (~0.6 ms against ~3 ms a sweep point): the same
# representer and resolver as safe_dump's (they decide each scalar's tag and quoting),
# so the strict loader reads back the same data; the pure-Python one otherwise
_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def parse_key(key: str) -> list[str | int]:
    """`datacenters.0.gpus` -> ['datacenters', 0, 'gpus'] (digits are list indices)."""
    parts = key.strip().split(".")
    if not key.strip() or any(not p for p in parts):
        raise InputError.single(
            WHERE,
            f"--vary {key}",
            repr(key),
            "a dotted key path such as workload.arrival_rate_per_s",
        )
    return [int(p) if p.isdigit() else p for p in parts]


def loader_path(parts: list[str | int]) -> str:
    """The key path as the loader writes it: `datacenters[0].gpus[1].price_usd_per_gpu_hour`."""
    text = ""
    for p in parts:
        text += f"[{p}]" if isinstance(p, int) else (f".{p}" if text else p)
    return text


def _bad_key(key: str, where: str, found: str, expected: str, hint: str = "") -> InputError:
    return InputError.single(WHERE, f"--vary {key}", f"{found} at {where}", expected, hint)


def set_path(data: dict, key: str, value: Any) -> bool:
    """Set `key` in the parsed scenario `data` (in place); True when the key was created
    (it was not in the file). A list index out of range, or a path through a number or a
    text, is an InputError."""
    parts = parse_key(key)
    node: Any = data
    created = False
    for depth, part in enumerate(parts):
        last = depth == len(parts) - 1
        where = loader_path(parts[: depth + 1])
        if isinstance(node, list):
            if not isinstance(part, int) or part >= len(node):
                raise _bad_key(
                    key, where, f"{part!r}", f"an index below {len(node)} (a list of {len(node)})"
                )
        elif isinstance(node, dict):
            if isinstance(part, int) and part not in node:
                part = str(part)
            if part not in node:
                created = True
                if not last:
                    node[part] = {}
        else:
            raise _bad_key(
                key,
                loader_path(parts[:depth]),
                describe(node),
                "a mapping or list",
            )
        if last:
            node[part] = value
        else:
            node = node[part]
    return created


def _profile_beside(data: dict, label: str) -> dict:
    """`engine.profile` made absolute: it is relative to the scenario file (`label`), and
    the edited copy is read from a temporary file elsewhere."""
    engine = data.get("engine") if isinstance(data, dict) else None
    profile = engine.get("profile") if isinstance(engine, dict) else None
    if not isinstance(profile, str) or Path(profile).expanduser().is_absolute():
        return data
    return {**data, "engine": {**engine, "profile": str((Path(label).parent / profile).absolute())}}


def _model_file_beside(data: dict, label: str) -> dict:
    """`model_file` made absolute, as `engine.profile` is (relative to the scenario)."""
    path = data.get("model_file") if isinstance(data, dict) else None
    if not isinstance(path, str) or Path(path).expanduser().is_absolute():
        return data
    return {**data, "model_file": str((Path(label).parent / path).absolute())}


def _curve_file_beside(data: dict, label: str) -> dict:
    """`workload.load_curve`'s file or export made absolute, as `engine.profile` is."""
    workload = data.get("workload") if isinstance(data, dict) else None
    curve = workload.get("load_curve") if isinstance(workload, dict) else None
    key = next((k for k in ("file", "prometheus") if isinstance(curve, dict)
                and isinstance(curve.get(k), str)), None)  # fmt: skip
    if key is None or Path(curve[key]).expanduser().is_absolute():
        return data
    curve = {**curve, key: str((Path(label).parent / curve[key]).absolute())}
    return {**data, "workload": {**workload, "load_curve": curve}}


def load_data(data: dict, label: str, catalog: Catalog) -> Scenario:
    """Load a parsed (and edited) scenario with the strict file loader; problems and the
    scenario's `source_file` name `label` instead of the temporary file."""
    data = _curve_file_beside(_model_file_beside(_profile_beside(data, label), label), label)
    fd, tmp = tempfile.mkstemp(prefix=".pdd-plan-edit.", suffix=".yaml")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            yaml.dump(data, handle, Dumper=_DUMPER, sort_keys=False)
        try:
            s = load_scenario(tmp, catalog)
        except InputError as exc:
            problems = [dataclasses.replace(p, file=label) for p in exc.problems]
            raise InputError(problems) from None
    finally:
        Path(tmp).unlink(missing_ok=True)
    return dataclasses.replace(s, source_file=label)


def with_hit_mean(s: Scenario, mean: Any) -> Scenario:
    """`s` with its hit-rate distribution (and alternatives) moved to `mean`."""
    ok = isinstance(mean, int | float) and not isinstance(mean, bool) and 0.0 <= mean <= 1.0
    if not ok:
        raise InputError.single(
            s.source_file, HIT_MEAN_KEY, repr(mean), "a mean hit rate between 0 and 1"
        )
    return with_hit_rate_mean(s, float(mean))


def edited(
    data: dict, edits: dict[str, Any], label: str, catalog: Catalog
) -> tuple[Scenario, set[str]]:
    """The scenario `data` with `edits` (key -> value) applied, and the keys that were
    created (not in the file)."""
    data = copy.deepcopy(data)
    created = set()
    for key, value in edits.items():
        if key not in (HIT_MEAN_KEY, ARCH_KEY) and set_path(data, key, value):
            created.add(key)
    s = load_data(data, label, catalog)
    if HIT_MEAN_KEY in edits:
        s = with_hit_mean(s, edits[HIT_MEAN_KEY])
    return s, created


def check_key(data: dict, key: str, value: Any, label: str, catalog: Catalog) -> None:
    """Raise InputError (exit 2, with a did-you-mean) when the scenario format has no
    `key`. A key in the file, or HIT_MEAN_KEY, is known; any other is set to `value` and
    the scenario loaded: a problem on the key's path that is not about `value` (an unknown
    key, an unknown id used as a key, an SLA key of the wrong form) means the format has
    no such key. Problems with the value itself are the sweep points' business."""
    if key == ARCH_KEY:
        from pdd_plan.model.deployment import ARCHITECTURE_ROLES

        if value not in ARCHITECTURE_ROLES:
            raise InputError.single(WHERE, f"--vary {key}", repr(value),
                                    f"one of {', '.join(ARCHITECTURE_ROLES)}",
                                    did_you_mean(value, ARCHITECTURE_ROLES))  # fmt: skip
        return
    if key == HIT_MEAN_KEY or not set_path(copy.deepcopy(data), key, value):
        return
    probe = copy.deepcopy(data)
    set_path(probe, key, value)
    try:
        load_data(probe, label, catalog)
    except InputError as exc:
        parts = parse_key(key)
        on_path = {loader_path(parts[: n + 1]) for n in range(len(parts))}
        for p in exc.problems:
            about_value = p.found == describe(value) and not p.expected.startswith("a known")
            if p.key_path in on_path and not about_value:
                near_mean = key.startswith("workload.prefix_hit_rate.")
                hint = (near_mean and did_you_mean(key, [HIT_MEAN_KEY])) or p.hint
                hint = hint or _suggest(key, p.expected)
                raise InputError.single(
                    WHERE, f"--vary {key}", f"{p.found} at {p.key_path}", p.expected, hint
                ) from None


def _suggest(key: str, expected: str) -> str:
    """A did-you-mean for the last part of `key` among the keys an `expected` text lists
    ("one of a, b, c"), looser than the loader's: a key that starts with the part counts."""
    part = key.rsplit(".", 1)[-1]
    if expected.startswith("one of "):
        options = [o.strip() for o in expected[len("one of ") :].split(",")]
        starts = [o for o in options if o.startswith(part)]
        if starts:
            return f"did you mean {starts[0]!r}?"
        return did_you_mean(part, options)
    return did_you_mean(key, [HIT_MEAN_KEY])
