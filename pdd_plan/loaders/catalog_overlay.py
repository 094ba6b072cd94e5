"""`--catalog-dir DIR`: a folder of the user's own catalog entries laid over the shipped one.

DIR holds any of `gpus/*.yaml`, `models/*.yaml`, `lines.yaml` and `sources.yaml`, in the
shipped catalog's format. An entry adds to the shipped ones, or replaces the shipped entry
of the same id (a file's stem, a tier's `id`, a source key); each replacement is said in a
note. The option sets the overlay for the process and the worker processes it starts
(sweep, report), through the environment as `--engine-profile` does.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from pdd_plan.errors import InputError
from pdd_plan.loaders.input_files import path_exists, shown_path
from pdd_plan.loaders.strict import load_yaml

OVERLAY_ENV = "PDD_PLAN_CATALOG_OVERLAY"
PARTS = ("gpus", "models", "lines.yaml", "sources.yaml")


def overlay_dir() -> Path | None:
    """The overlay folder of this run (None: the shipped catalog alone)."""
    path = os.environ.get(OVERLAY_ENV)
    return Path(path) if path else None


def use_catalog_dir(path: str) -> Path:
    """Check the `--catalog-dir` folder now (one line, exit 2, before any work) and make it
    the run's overlay. A folder with none of the catalog's parts is refused: a mistyped
    folder would otherwise change nothing, silently."""
    folder = Path(path).expanduser()
    expected = f"a folder holding any of {', '.join(PARTS)} (a catalog overlay)"
    if not folder.is_dir():
        found = "no such folder" if not path_exists(folder) else "not a folder"
        raise InputError.single("command line", "--catalog-dir", f"{path!r} ({found})", expected)
    if not any(path_exists(folder / part) for part in PARTS):
        raise InputError.single(
            "command line", "--catalog-dir", f"{path!r} (none of the catalog's parts)", expected
        )
    _refuse_folder_parts_that_are_files(folder)
    os.environ[OVERLAY_ENV] = str(folder.resolve())
    return folder


def _refuse_folder_parts_that_are_files(folder: Path) -> None:
    """`gpus` or `models` that is a file (a mistyped copy, a `models` written by `-o`)
    would lay nothing over the catalog, silently: one line, as a folder with no parts is.
    (`lines.yaml` or `sources.yaml` that is a folder is refused when it is read.)"""
    for part in ("gpus", "models"):
        where = folder / part
        if path_exists(where) and not where.is_dir():
            expected = f"a folder of {part[:-1]} entries ({part}/*.yaml) or nothing"
            raise InputError.single(shown_path(where), "", "a file, not a folder", expected)


def _line_ids(path: Path) -> set[str]:
    data = load_yaml(path, "the line-tier catalog") if path_exists(path) else None
    tiers = data.get("tiers") if isinstance(data, dict) else None
    return {t["id"] for t in tiers or [] if isinstance(t, dict) and isinstance(t.get("id"), str)}


def replaced_ids(root: Path, overlay: Path) -> list[str]:
    """`kind id` of every shipped entry the overlay replaces, sorted."""
    out = []
    for kind in ("gpus", "models"):
        mine = {p.stem for p in (overlay / kind).glob("*.yaml")}
        shipped = {p.stem for p in (root / kind).glob("*.yaml")}
        out += [f"{kind[:-1]} {i}" for i in sorted(mine & shipped)]
    if path_exists(overlay / "lines.yaml"):
        both = _line_ids(overlay / "lines.yaml") & _line_ids(root / "lines.yaml")
        out += [f"line tier {i}" for i in sorted(both)]
    return out


def overlay_notes(root: Path, overlay: Path) -> list[str]:
    """One note per replaced shipped entry (an addition needs none)."""
    where = shown_path(overlay)
    return [f"--catalog-dir {where}: {entry} replaces the shipped entry" for entry in
            replaced_ids(root, overlay)]  # fmt: skip


def _digest(files: list[Path], root: Path) -> str:
    digest = hashlib.sha256()
    for path in files:
        digest.update(path.relative_to(root).as_posix().encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()


def provenance_facts(overlay: Path | None, model_file: str) -> list[tuple[str, str]]:
    """What the bill of materials adds to its top when figures came from outside the
    shipped catalog (its catalog digest covers the shipped files only): the overlay's
    folder and a SHA-256 over its files (relative path, NUL, bytes, NUL, sorted by path),
    and the model file's path and the SHA-256 of its bytes."""
    facts = []
    if overlay is not None:
        files = sorted(p for p in overlay.rglob("*") if p.is_file())
        facts.append(("catalog_overlay", f"{overlay} (sha256 {_digest(files, overlay)})"))
    if model_file:
        path = Path(model_file)
        sha = hashlib.sha256(path.read_bytes()).hexdigest()  # as `sha256sum` prints it
        facts.append(("model_file", f"{path} (sha256 {sha})"))
    return facts
