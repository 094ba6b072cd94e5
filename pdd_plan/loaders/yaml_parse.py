"""The YAML parser every input file goes through: safe, strict about repeated keys and
list sizes, YAML 1.2's implicit types, and what makes a parsed tree too deep.

`strict.load_yaml` turns its failures into InputError lines (a character the reader
refuses is worded here, with its line and column).
"""

from __future__ import annotations

import re
from typing import Any

import yaml

from pdd_plan.errors import InputError

MAX_LIST_ITEMS = 10_000  # items of one list (or keys of one mapping) in any input file
MAX_DEPTH = 40


def too_deep(value: Any, limit: int) -> str | None:
    """The key path of a value nested deeper than `limit` levels, or None. A container
    reached again (a YAML alias) is walked again only if reached deeper, so aliases that
    multiply a small file into a huge tree cost no more than the file."""
    stack: list = [(value, 1, None)]
    deepest_seen: dict[int, int] = {}
    while stack:
        item, depth, where = stack.pop()
        if depth > limit:
            return _render_path(where)
        if not isinstance(item, dict | list) or deepest_seen.get(id(item), 0) >= depth:
            continue
        deepest_seen[id(item)] = depth
        pairs = (
            ((str(k), v) for k, v in item.items()) if isinstance(item, dict) else enumerate(item)
        )
        stack.extend((child, depth + 1, (key, where)) for key, child in pairs)
    return None


def _render_path(where, max_parts: int = 8) -> str:
    """`(key, (parent_key, ...))` -> `a.b[0]`, cut after `max_parts` parts."""
    keys = []
    while where is not None:
        key, where = where
        keys.append(key)
    keys.reverse()
    text = ""
    for key in keys[:max_parts]:
        text += f"[{key}]" if isinstance(key, int) else (f".{key}" if text else str(key))
    return (text + ("..." if len(keys) > max_parts else "")) or "(top level)"


# libyaml's parser where PyYAML has it (ten times faster: the catalog is 20-odd files read
# at every start); construction and implicit typing stay in Python either way
_SafeBase = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class TooLong(yaml.YAMLError):
    """A list (or mapping) with more items than any input needs: refused before it is
    built, so a file of a million list items costs its parse, not a minute of building."""

    def __init__(self, node, kind: str):
        super().__init__(kind)
        self.mark, self.kind, self.count = node.start_mark, kind, len(node.value)


class StrictLoader(_SafeBase):
    """`safe_load` that refuses a mapping with a key given twice (YAML keeps the last)
    and a list or mapping of more than MAX_LIST_ITEMS items."""

    def construct_sequence(self, node, deep=False):
        if isinstance(node, yaml.SequenceNode) and len(node.value) > MAX_LIST_ITEMS:
            raise TooLong(node, "list")
        return super().construct_sequence(node, deep=deep)

    def construct_mapping(self, node, deep=False):
        if isinstance(node, yaml.MappingNode) and len(node.value) > MAX_LIST_ITEMS:
            raise TooLong(node, "mapping")
        seen = set()
        for key_node, _ in node.value:
            if not isinstance(key_node, yaml.ScalarNode) or key_node.tag.endswith(":merge"):
                continue
            key = self.construct_object(key_node)
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"found the key {key!r} twice", key_node.start_mark
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


class _NoColon:
    """An implicit int or float pattern without YAML 1.1's base 60: `1:30` is the text
    `1:30` (YAML 1.2), never the number 90, so a message shows what the file says."""

    def __init__(self, rx: re.Pattern):
        self.rx = rx

    def match(self, value: str):
        return None if ":" in value else self.rx.match(value)


def _yaml_1_2(tag: str, rx):
    return (tag, _NoColon(rx)) if tag.endswith((":int", ":float")) else (tag, rx)


# YAML 1.1 reads `1e3` as text, `2024-01-01` as a date and `1:30` as 90: in input files the
# first is a number, the others an id or a name, as YAML 1.2 and every user would have it.
StrictLoader.yaml_implicit_resolvers = {
    first: [_yaml_1_2(tag, rx) for tag, rx in resolvers if not tag.endswith(":timestamp")]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
StrictLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?[0-9][0-9_]*(?:\.[0-9_]*)?[eE][-+]?[0-9]+$"),
    list("-+0123456789"),
)


def unreadable_character(name: str, text: str, exc, what: str) -> InputError:
    """A control character (ESC, BEL...) written raw into the text: its line, column and
    code, as a syntax error's (YAML takes such characters only as escapes in quotes)."""
    before = text[: max(int(exc.position), 0)]
    line, column = before.count("\n") + 1, len(before) - (before.rfind("\n") + 1) + 1
    code = exc.character if isinstance(exc.character, int) else ord(str(exc.character)[:1] or " ")
    found = f"the character U+{code:04X} ({exc.reason})"
    expected = f"{what} (a control character only as an escape in quotes)"
    return InputError.single(name, f"line {line}, column {column}", found, expected)
