"""Building one broken scenario from scenarios/template.yaml (the cases in
bad_input_cases.py break one thing each)."""

from __future__ import annotations

import copy
import random
from collections.abc import Callable
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
TEMPLATE = yaml.safe_load((REPO / "scenarios" / "template.yaml").read_text(encoding="utf-8"))


# ---- building one broken scenario ----------------------------------------------------------
def template() -> dict:
    return copy.deepcopy(TEMPLATE)


def template_text() -> str:
    return yaml.safe_dump(template(), sort_keys=False)


def _parent(data, dotted: str):
    keys = [int(k) if k.isdigit() else k for k in dotted.split(".")]
    for key in keys[:-1]:
        data = data[key]
    return data, keys[-1]


def set_key(dotted: str, value) -> Callable[[dict], None]:
    def mutate(data: dict) -> None:
        parent, key = _parent(data, dotted)
        parent[key] = value

    return mutate


def drop_key(dotted: str) -> Callable[[dict], None]:
    def mutate(data: dict) -> None:
        parent, key = _parent(data, dotted)
        del parent[key]

    return mutate


def rename_key(dotted: str, new_key: str) -> Callable[[dict], None]:
    def mutate(data: dict) -> None:
        parent, key = _parent(data, dotted)
        parent[new_key] = parent.pop(key)

    return mutate


def _write(tmp: Path, content: bytes) -> Path:
    path = tmp / "scenario.yaml"
    path.write_bytes(content)
    return path


def mutated(*mutations: Callable[[dict], None]) -> Callable[[Path], Path]:
    """The template with `mutations` applied, dumped to a file."""

    def make(tmp: Path) -> Path:
        data = template()
        for mutate in mutations:
            mutate(data)
        return _write(tmp, yaml.safe_dump(data, sort_keys=False).encode())

    return make


def raw(edit: Callable[[str], str | bytes]) -> Callable[[Path], Path]:
    """The dumped template's text, edited as text (for what a dict cannot express)."""

    def make(tmp: Path) -> Path:
        content = edit(template_text())
        return _write(tmp, content.encode() if isinstance(content, str) else content)

    return make


def replace_line(old: str, new: str) -> Callable[[str], str]:
    def edit(text: str) -> str:
        assert f"{old}\n" in text, old
        return text.replace(f"{old}\n", f"{new}\n", 1)

    return edit


def nested_lists(levels: int) -> list:
    value: list = []
    for _ in range(levels - 1):
        value = [value]
    return value


def alias_bomb(text: str) -> str:
    """`description` as 9 levels of 9 aliases: 9**9 strings if expanded, 700 bytes on disk."""
    levels = ["&a [" + ", ".join(["lol"] * 9) + "]"]
    for previous, name in zip("abcdefgh", "bcdefghi", strict=True):
        levels.append(f"&{name} [" + ", ".join([f"*{previous}"] * 9) + "]")
    bomb = "description: [" + ", ".join(levels) + "]"
    return replace_line(f"description: {TEMPLATE['description']}", bomb)(text)


def not_utf8(text: str) -> bytes:
    return text.encode().replace(b"template", b"t\xe9mplate", 1)


def binary(text: str) -> bytes:
    noise = random.Random(0).randbytes(2048)
    return noise[:1000] + b"\x00" + noise[1000:]


def a_directory(tmp: Path) -> Path:
    path = tmp / "scenario.yaml"
    path.mkdir()
    return path
