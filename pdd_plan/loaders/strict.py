"""A strict reader for YAML input: every problem collected with its key path, none silent.

`load_yaml` turns every way a file can be unreadable into an InputError; `Node` walks the
parsed data, checks types, ranges and keys (unknown keys get a did-you-mean), and records
problems instead of stopping at the first, so a user fixes a file in one pass.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import yaml

from pdd_plan.errors import InputError, Problem
from pdd_plan.loaders.input_files import MIB, read_input_bytes, shown_path
from pdd_plan.loaders.suggest import did_you_mean
from pdd_plan.loaders.yaml_parse import (
    MAX_DEPTH,
    MAX_LIST_ITEMS,
    StrictLoader,
    TooLong,
    too_deep,
    unreadable_character,
)

# Size caps per kind of file: far above any real one (the shipped files are under 20 KiB, a
# scenario with 10,000 bins about 600 KiB), low enough that parsing the largest allowed
# file takes about a second, not a minute and gigabytes.
DEFAULT_FILE_BYTES = MIB
FILE_CAPS = (
    ("a pdd-plan scenario", MIB),
    ("a pdd-plan plan file", 256 * 1024),
    ("a Hugging Face config", 2 * MIB),
    ("a GPU catalog entry", 256 * 1024),
    ("a model catalog entry", 256 * 1024),
)
ID_PATTERN = re.compile(r"^[a-z0-9_]+$")


def max_file_bytes(what: str) -> int:
    """The size cap of a kind of input file (`what` as the loaders name it)."""
    return next((cap for start, cap in FILE_CAPS if what.startswith(start)), DEFAULT_FILE_BYTES)


def load_yaml(path: Path | str, what: str = "a YAML file") -> Any:
    """Parse a YAML (or JSON) file with `safe_load`; any failure is one clear InputError."""
    name = shown_path(path)
    raw = read_input_bytes(path, what, max_file_bytes(what))
    if b"\x00" in raw:
        raise InputError.single(name, "", "binary data (NUL bytes)", f"{what} (UTF-8 text)")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError.single(
            name, "", f"bytes that are not UTF-8 (at byte {exc.start})", f"{what} (UTF-8 text)"
        ) from None
    if not text.strip():
        raise InputError.single(name, "", "an empty file", what)
    try:
        data = yaml.load(text, Loader=StrictLoader)  # a SafeLoader: no arbitrary objects
    except TooLong as exc:
        where = f"line {exc.mark.line + 1}, column {exc.mark.column + 1}"
        found = f"a {exc.kind} of {exc.count:,} items"
        raise InputError.single(name, where, found, f"at most {MAX_LIST_ITEMS:,} items") from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "unknown position"
        problem = (exc.problem or "syntax error").strip()
        raise InputError.single(name, where, f"invalid YAML ({problem})", what) from None
    except yaml.reader.ReaderError as exc:  # a character YAML text may not hold: say where
        raise unreadable_character(name, text, exc, what) from None
    except (yaml.YAMLError, RecursionError) as exc:
        raise InputError.single(name, "", f"invalid YAML ({type(exc).__name__})", what) from None
    except ValueError as exc:  # a huge integer, an impossible date, `!!int abc`...
        reason = str(exc).split(";")[0]
        raise InputError.single(name, "", f"a value YAML cannot convert ({reason})", what) from None
    deep_path = too_deep(data, MAX_DEPTH)
    if deep_path is not None:
        raise InputError.single(name, deep_path, f"nesting deeper than {MAX_DEPTH} levels", what)
    return data


_MISSING = object()


def _expected_key(known: set[str], patterns: tuple[str, ...], pattern_text: str) -> str:
    """What a mapping's keys may be: its known keys, and what its `patterns` allow (a
    mapping of free names has no known keys: never "one of" an empty list)."""
    free = pattern_text or (f"a key matching {' or '.join(patterns)}" if patterns else "")
    if not known:
        return free or "no keys (an empty mapping)"
    listed = f"one of {', '.join(sorted(known))}"
    return f"{listed} or {free}" if free else listed


def describe(value: Any) -> str:
    """How a found value reads in a message: short, typed, never a wall of text."""
    if value is _MISSING:
        return "nothing"
    if value is None:
        return "nothing (null)"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, dict):
        return (
            f"a mapping with keys {', '.join(map(str, list(value)[:5]))}"
            if value
            else "an empty mapping"
        )
    if isinstance(value, list):
        return f"a list of {len(value)} item{'' if len(value) == 1 else 's'}"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


class Problems:
    """The problems of one file, collected as the reader walks it."""

    def __init__(self, file: str):
        self.file = file
        self.items: list[Problem] = []
        self._paths: set[str] = set()

    def add(self, path: str, found: str, expected: str, hint: str = "") -> None:
        """Record a problem; only the first at a key path (a key that is missing, or of
        the wrong type, would otherwise be reported again by each check that reads it)."""
        if path in self._paths:
            return
        self._paths.add(path)
        self.items.append(Problem(self.file, path, found, expected, hint))

    def raise_if_any(self) -> None:
        if self.items:
            raise InputError(self.items)


class Node:
    """A value in a parsed file with its key path; typed getters record problems."""

    def __init__(self, value: Any, path: str, problems: Problems):
        self.value, self.path, self.problems = value, path, problems

    def _child_path(self, key) -> str:
        if isinstance(key, int):
            return f"{self.path}[{key}]"
        return f"{self.path}.{key}" if self.path else str(key)

    def fail(self, expected: str, hint: str = "") -> None:
        self.problems.add(self.path or "(top level)", describe(self.value), expected, hint)

    @classmethod
    def absent(cls, path: str, problems: Problems) -> Node:
        """A key that is not in the file (an optional section's defaults apply)."""
        return cls(_MISSING, path, problems)

    @property
    def is_missing(self) -> bool:
        return self.value is _MISSING

    # ---- containers ----------------------------------------------------------------------
    def mapping(
        self,
        required: tuple[str, ...] = (),
        optional: tuple[str, ...] = (),
        patterns: tuple[str, ...] = (),
        pattern_text: str = "",
    ) -> dict[str, Node] | None:
        """Check a mapping's keys; return child nodes for the known ones (missing optional
        keys come back as missing nodes). Keys matching `patterns` are accepted too;
        `pattern_text` says what they are in a message."""
        if not isinstance(self.value, dict):
            self.fail("a mapping" + (f" with keys {', '.join(required)}" if required else ""))
            return None
        known = set(required) | set(optional)
        children: dict[str, Node] = {}
        for key, value in self.value.items():
            if key in known or any(re.fullmatch(p, str(key)) for p in patterns):
                children[str(key)] = Node(value, self._child_path(str(key)), self.problems)
            else:
                self.problems.add(
                    self._child_path(str(key)),
                    "an unknown key" if known else f"the key {describe(key)}",
                    _expected_key(known, patterns, pattern_text),
                    did_you_mean(key, known),
                )
        for key in required:
            if key not in self.value:
                self.problems.add(self._child_path(key), "nothing", "this key (it is required)")
        for key in known:
            children.setdefault(key, Node(_MISSING, self._child_path(key), self.problems))
        return children

    def items(self, min_items: int = 0) -> list[Node] | None:
        if not isinstance(self.value, list):
            self.fail("a list")
            return None
        if len(self.value) < min_items:
            self.fail(f"a list of at least {min_items} item{'s' if min_items > 1 else ''}")
            return None
        return [Node(v, self._child_path(i), self.problems) for i, v in enumerate(self.value)]

    # ---- scalars ---------------------------------------------------------------------------
    def _absent(self, default, required: bool):
        if required:
            self.problems.add(self.path, "nothing", "this key (it is required)")
        return default

    def number(
        self,
        *,
        minimum: float | None = None,
        maximum: float | None = None,
        exclusive_minimum: bool = False,
        default=None,
        required: bool = False,
        integer: bool = False,
        unit: str = "",
    ) -> float | None:
        if self.is_missing or (self.value is None and not required):
            return self._absent(default, required)
        v = self.value
        kind = "a whole number" if integer else "a number"
        ok = isinstance(v, int | float) and not isinstance(v, bool)
        if ok and isinstance(v, float) and not math.isfinite(v):
            ok = False
        if ok and integer and isinstance(v, float):
            ok = v.is_integer()
        bounds = []
        if minimum is not None:
            bounds.append(f"{'>' if exclusive_minimum else '>='} {minimum:g}")
        if maximum is not None:
            bounds.append(f"<= {maximum:g}")
        expected = (
            f"{kind}{' ' + ' and '.join(bounds) if bounds else ''}{' ' + unit if unit else ''}"
        )
        if not ok:
            self.fail(expected)
            return default
        too_low = minimum is not None and (v <= minimum if exclusive_minimum else v < minimum)
        if too_low or (maximum is not None and v > maximum):
            self.fail(expected)
            return default
        return int(v) if integer else float(v)

    def integer(self, **kwargs) -> int | None:
        return self.number(integer=True, **kwargs)

    def fraction(self, default=None, required: bool = False) -> float | None:
        return self.number(minimum=0.0, maximum=1.0, default=default, required=required)

    def string(
        self,
        *,
        default=None,
        required: bool = False,
        pattern: re.Pattern | None = None,
        expected: str = "a text",
    ) -> str | None:
        if self.is_missing or (self.value is None and not required):
            return self._absent(default, required)
        if not isinstance(self.value, str) or not self.value.strip():
            self.fail(expected)
            return default
        if pattern and not pattern.fullmatch(self.value):
            self.fail(expected)
            return default
        return self.value

    def identifier(self, **kwargs) -> str | None:
        return self.string(
            pattern=ID_PATTERN, expected="an id of lower-case letters, digits and _", **kwargs
        )

    def choice(self, choices, *, default=None, required: bool = False) -> Any:
        if self.is_missing or (self.value is None and not required):
            return self._absent(default, required)
        if isinstance(self.value, bool | dict | list) or self.value not in choices:
            self.fail(f"one of {', '.join(map(str, choices))}", did_you_mean(self.value, choices))
            return default
        return self.value

    def reference(self, known, what: str, *, required: bool = True, default=None) -> str | None:
        """An id that must name something that exists (a GPU, a tier, a datacenter)."""
        raw = self.value
        if isinstance(raw, str) and raw.strip() and not ID_PATTERN.fullmatch(raw):
            # `qwen3-32b`, `wave_10G`: not an id, but close to one; say which
            self.fail(f"a known {what} id", did_you_mean(raw, known))
            return default
        value = self.identifier(required=required, default=default)
        if value is not None and value not in known:
            self.fail(f"a known {what} id", did_you_mean(value, known))
            return default
        return value

    def boolean(self, *, default=None, required: bool = False) -> bool | None:
        if self.is_missing or (self.value is None and not required):
            return self._absent(default, required)
        if not isinstance(self.value, bool):
            self.fail("true or false")
            return default
        return self.value
