"""What the loaders check, recorded as they check it, and what a JSON Schema says at a key path:
the two sides the schema drift tests compare (tests/unit/test_schema_*.py).

The loaders have no key tables a test could read: each section calls the strict reader's
getters (`Node.mapping`, `.number`, `.choice`, ...) with its keys, bounds and choices in the
call. `recorded` wraps those getters while a document loads and keeps every call with its
key path and arguments: the loader's own tables, as it uses them.
"""

from __future__ import annotations

import contextlib
import copy
import inspect
import os
import re
from dataclasses import dataclass, field

import jsonschema

from pdd_plan.loaders import strict
from pdd_plan.loaders.file_schemas import file_schema

GETTERS = ("mapping", "items", "number", "string", "choice", "boolean")
_SEGMENT = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


@dataclass(frozen=True)
class Call:
    """One getter call: which, at what key path, with what arguments, on what value."""

    getter: str
    path: str
    args: dict = field(hash=False, compare=False)
    value: object = field(hash=False, compare=False)
    file: str = ""  # the file being read (a scenario also reads its model and profile files)


@contextlib.contextmanager
def recorded(file: str | os.PathLike):
    """Every getter call made reading `file` inside the block, in order (a list filled as
    it runs); the other files it reads (a model entry, an engine profile) are left out."""
    calls: list[Call] = []
    originals = {name: getattr(strict.Node, name) for name in GETTERS}

    def wrap(name, original):
        signature = inspect.signature(original)

        def recording(self, *args, **kwargs):
            bound = signature.bind(self, *args, **kwargs)
            bound.apply_defaults()
            arguments = {k: v for k, v in bound.arguments.items() if k != "self"}
            if self.problems.file == str(file):
                calls.append(Call(name, self.path, arguments, self.value, str(file)))
            return original(self, *args, **kwargs)

        return recording

    try:
        for name, original in originals.items():
            setattr(strict.Node, name, wrap(name, original))
        yield calls
    finally:
        for name, original in originals.items():
            setattr(strict.Node, name, original)


# ---- key paths -------------------------------------------------------------------------------
def scenario_reads(folder, catalog, docs: dict) -> dict[str, list]:
    """Document name -> the getter calls the scenario loader made reading it (each of
    `docs` written under `folder`, the scenario folder of schema_docs)."""
    import schema_docs as sd  # noqa: PLC0415 - a test helper beside this one

    from pdd_plan.loaders.scenario import load_scenario  # noqa: PLC0415

    out = {}
    for name, doc in docs.items():
        path = sd.write(folder, name, doc)
        with recorded(path) as calls:
            load_scenario(path, catalog)
        out[name] = calls
    return out


def segments(path: str) -> list[str | int]:
    """`datacenters[0].gpus[1].gpu` -> ['datacenters', 0, 'gpus', 1, 'gpu']."""
    return [int(i) if i else key for key, i in _SEGMENT.findall(path)]


def free_mappings(calls: list[Call]) -> set[str]:
    """The key paths of mappings whose keys are free names (`patterns`), indices dropped."""
    return {generic(c.path) for c in calls if c.getter == "mapping" and c.args["patterns"]}


def generic(path: str, free: set[str] = frozenset()) -> str:
    """A key path with list indices as `[]` and each free name (a key of a mapping in
    `free`) as `*`: `workload.prefix_hit_rate_alternatives.*.kind`."""
    out = ""
    for seg in segments(path):
        if isinstance(seg, int):
            out += "[]"
        elif out in free:
            out += ".*"
        else:
            out += f".{seg}" if out else seg
    return out


def lookup(doc, path: str):
    node = doc
    for seg in segments(path):
        node = node[seg]
    return node


def with_value(doc, path: str, value=None, *, delete: bool = False):
    """A copy of `doc` with the key at `path` set to `value` (or deleted)."""
    out = copy.deepcopy(doc)
    *parents, last = segments(path)
    node = out
    for seg in parents:
        node = node[seg]
    if delete:
        del node[last]
    else:
        node[last] = value
    return out


def has_parent(doc, path: str) -> bool:
    try:
        parent = lookup(doc, path.rsplit(".", 1)[0]) if "." in path else doc
    except (KeyError, IndexError, TypeError):
        return False
    return isinstance(parent, dict | list)


# ---- the schema's side -----------------------------------------------------------------------
class SchemaView:
    """A schema read at key paths: which subschemas apply, their keys and enums."""

    def __init__(self, kind: str):
        self.schema = file_schema(kind)
        self.validator = jsonschema.Draft202012Validator(self.schema)

    def accepts(self, doc) -> bool:
        return self.validator.is_valid(doc)

    def _resolve(self, ref: str) -> dict:
        node = self.schema
        for part in ref.removeprefix("#/").split("/"):
            node = node[part]
        return node

    def expand(self, schema) -> list[dict]:
        """`schema` and every subschema applying to the same value (through $ref, allOf,
        anyOf, oneOf, then and else; not `if`, a condition, nor `not`)."""
        if not isinstance(schema, dict):
            return []
        out = [schema]
        if "$ref" in schema:
            out += self.expand(self._resolve(schema["$ref"]))
        for key in ("allOf", "anyOf", "oneOf"):
            for sub in schema.get(key, []):
                out += self.expand(sub)
        for key in ("then", "else"):
            out += self.expand(schema.get(key))
        return out

    def at(self, path: str) -> list[dict]:
        """The subschemas that apply at a generic key path (`[]` an item, `*` a free name)."""
        current = self.expand(self.schema)
        for seg in re.findall(r"\[\]|[^.\[\]]+", path):
            nxt = []
            for s in current:
                if seg == "[]":
                    nxt += self.expand(s.get("items"))
                    continue
                props, patterns = s.get("properties", {}), s.get("patternProperties", {})
                if seg in props:
                    nxt += self.expand(props[seg])
                    continue
                matched = [p for p in patterns if seg == "*" or re.search(p, seg)]
                nxt += [x for p in matched for x in self.expand(patterns[p])]
                if (seg == "*" or not matched) and isinstance(s.get("additionalProperties"), dict):
                    nxt += self.expand(s["additionalProperties"])
            current = nxt
        return current

    def keys_at(self, path: str) -> set[str]:
        return {k for s in self.at(path) for k in s.get("properties", {})}

    def free_at(self, path: str) -> bool:
        """Whether the mapping at `path` takes free names (patterns or any key)."""
        return any(s.get("patternProperties") or isinstance(s.get("additionalProperties"), dict)
                   for s in self.at(path))  # fmt: skip

    def enum_at(self, path: str) -> set:
        values = set()
        for s in self.at(path):
            values |= set(s.get("enum", ())) | ({s["const"]} if "const" in s else set())
        return values - {None}

    def key_paths(self, schema=None, path: str = "", stop: tuple[str, ...] = ()) -> set[str]:
        """The generic key path of every key the schema names, retired ones (`not: {}`)
        left out; below a `$ref` to one of `stop` only the path itself."""
        out = set()
        for s in self.expand(self.schema if schema is None else schema):
            for key, sub in s.get("properties", {}).items():
                if sub.get("not") == {}:
                    continue
                inner = f"{path}.{key}" if path else key
                out.add(inner)
                if sub.get("$ref", "").rsplit("/", 1)[-1] not in stop:
                    out |= self.key_paths(sub, inner, stop)
            for sub in [*s.get("patternProperties", {}).values(), s.get("additionalProperties")]:
                if isinstance(sub, dict):
                    out.add(f"{path}.*")
                    if sub.get("$ref", "").rsplit("/", 1)[-1] not in stop:
                        out |= self.key_paths(sub, f"{path}.*", stop)
            if isinstance(s.get("items"), dict):
                out |= self.key_paths(s["items"], f"{path}[]", stop)
        return out

    def object_paths(self, schema=None, path: str = "") -> set[str]:
        """The generic key path of every object with named keys the schema describes."""
        out = set()
        for s in self.expand(self.schema if schema is None else schema):
            if s.get("properties") and "type" in s:
                out.add(path)
            for key, sub in s.get("properties", {}).items():
                out |= self.object_paths(sub, f"{path}.{key}" if path else key)
            for sub in [*s.get("patternProperties", {}).values(), s.get("additionalProperties")]:
                if isinstance(sub, dict):
                    out |= self.object_paths(sub, f"{path}.*")
            if isinstance(s.get("items"), dict):
                out |= self.object_paths(s["items"], f"{path}[]")
        return out


def unique_calls(reads: dict[str, list[Call]], docs: dict) -> list[tuple[str, Call]]:
    """(document name, call): each getter, generic key path and arguments once, on a
    document whose value at that path is the one the call read."""
    every = [c for calls in reads.values() for c in calls]
    free = free_mappings(every)
    seen, out = set(), []
    for name, calls in reads.items():
        for c in calls:
            key = (c.getter, generic(c.path, free), repr(sorted(c.args.items(), key=str)))
            if key not in seen and _reads_the_document(docs[name], c):
                seen.add(key)
                out.append((name, c))
    return out


def _reads_the_document(doc, call: Call) -> bool:
    """Whether the call read the document's own value at its path (or a key left out);
    a name read as an id (`tier_prices_usd_per_month`'s keys) is not the value there."""
    try:
        value = lookup(doc, call.path) if call.path else doc
    except (KeyError, IndexError, TypeError):
        return has_parent(doc, call.path) and not isinstance(call.value, dict | list | str)
    return value == call.value and type(value) is type(call.value)


# ---- probes: one change to a valid document each ------------------------------------------
@dataclass(frozen=True)
class Probe:
    """A valid document changed at one key path, breaking `rule` ("type", "minimum",
    "maximum", "whole", "choice", "unknown key", "required key", ...). `structural`: the
    change breaks the getter's own rule, so a schema that states the rule refuses it too;
    otherwise only the loader may refuse it (a rule across keys, files or the catalog)."""

    rule: str
    value: object
    path: str
    doc: object
    structural: bool

    def __str__(self) -> str:
        return f"{self.path or '(top level)'} {self.rule}: {self.value!r}"


_WRONG = {
    "number": ["zz", True, [1], {"zz": 1}],
    "string": [7, True, [1], {"zz": 1}, "", "  "],
    "boolean": ["yes", 1, [1]],
    "choice": ["zz_not_a_choice", 7, True, [1]],
    "items": ["zz", 7, {"zz": 1}],
    "mapping": [[1], "zz", 7],
}
UNKNOWN_KEY = "zz_unknown_key"


def _replace(doc, path: str, value):
    return value if path == "" else with_value(doc, path, value)


def _key_path(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _number_values(a: dict) -> tuple[list, list]:
    """([(rule, value)] outside the getter's bounds or not whole, [values at its bounds])."""
    low, high, bad, good = a["minimum"], a["maximum"], [], []
    if low is not None:
        bad.append(("minimum", low if a["exclusive_minimum"] else low - max(abs(low), 1) / 2))
        good += [] if a["exclusive_minimum"] else [low]
        if a["integer"] and (high is None or low + 0.5 < high):
            bad.append(("whole", low + 0.5))
    if high is not None:
        bad.append(("maximum", high + max(abs(high), 1) / 2))
        good.append(high)
    return bad, good


def _values(call: Call) -> tuple[list, list]:
    """([(rule, value)] breaking the getter's rules, [values it takes]) for a scalar or list."""
    a, bad = call.args, [("type", v) for v in _WRONG[call.getter]]
    if call.getter == "number":
        out_of_range, good = _number_values(a)
        return bad + out_of_range, good
    if call.getter == "string":
        pattern = a["pattern"]
        return bad + ([("pattern", "Not-An-Id!")] if pattern else []), [
            "a_valid_id_0" if pattern else "a text"
        ]
    if call.getter == "boolean":
        return bad, [True, False]
    if call.getter == "choice":
        return [("choice", "zz_not_a_choice"), *bad[1:]], list(a["choices"])
    least = a["min_items"]
    short = (
        [("min items", call.value[: least - 1])] if least and isinstance(call.value, list) else []
    )
    return bad + short, []


def probes(call: Call, doc, keys_elsewhere: set[str] = frozenset()):
    """The probes of one getter call on `doc` (its value there must be the call's);
    `keys_elsewhere`: keys other mapping calls at this path take (a distribution's first
    reading takes every kind's keys, its second one kind's)."""
    path = call.path
    yield Probe("null", None, path, _replace(doc, path, None), False)
    if call.getter != "mapping":
        bad, good = _values(call)
        yield from (Probe(r, v, path, _replace(doc, path, v), True) for r, v in bad)
        yield from (Probe("taken", v, path, _replace(doc, path, v), False) for v in good)
        return
    a = call.args
    for v in _WRONG["mapping"]:
        yield Probe("type", v, path, _replace(doc, path, v), True)
    present = call.value if isinstance(call.value, dict) else {}
    if not a["patterns"]:
        added = {UNKNOWN_KEY} | (keys_elsewhere - set(a["required"]) - set(a["optional"]))
        for key in sorted(added - set(present)):
            yield Probe("unknown key", 1, _key_path(path, key),
                        _replace(doc, path, {**present, key: 1}), True)  # fmt: skip
    for key in present:
        without = {k: v for k, v in present.items() if k != key}
        required = key in a["required"]
        yield Probe("required key" if required else "optional key", "(left out)",
                    _key_path(path, key), _replace(doc, path, without), required)  # fmt: skip


def findings(view: SchemaView, load, probe_list, gaps: set = frozenset()) -> list[str]:
    """Where schema and loader disagree: the loader takes what the schema refuses, or the
    loader refuses a structural break the schema takes (unless (generic path, rule) is in
    `gaps`: a rule the schema cannot state). `load(doc)` raises InputError to refuse."""
    from pdd_plan.errors import InputError

    out = []
    for p in probe_list:
        try:
            load(p.doc)
            loader_takes = True
        except InputError:
            loader_takes = False
        except Exception as exc:  # a loader bug: reported, not hidden
            out.append(f"{p}: the loader failed: {exc!r}")
            continue
        schema_takes = view.accepts(p.doc)
        if loader_takes and not schema_takes:
            out.append(f"{p}: the loader takes it, the schema refuses it")
        elif (
            p.structural
            and not loader_takes
            and schema_takes
            and ((generic(p.path), p.rule) not in gaps)
        ):
            out.append(f"{p}: the loader refuses it, the schema takes it")
    return out
