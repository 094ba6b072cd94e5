"""`--catalog-dir DIR`, accepted before or after any command's name (as `--debug` is):
every command that reads the catalog reads it with DIR laid over the shipped one
(loaders/catalog_overlay.py), worker processes included."""

from __future__ import annotations

import sys

from pdd_plan.errors import InputError

OPTION = "--catalog-dir"
HELP = (
    f"{OPTION} DIR (before or after the command): lay your own catalog entries over the "
    "shipped catalog (DIR/gpus/*.yaml, DIR/models/*.yaml, DIR/lines.yaml, DIR/sources.yaml; "
    "an entry of a shipped id replaces it, with a note)."
)


def take_catalog_dir(args: list[str]) -> tuple[list[str], str | None]:
    """`args` without `--catalog-dir DIR` (or `--catalog-dir=DIR`), and DIR. Arguments
    after a bare `--` are left alone."""
    rest, folder = [], None
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            rest += args[i:]
            break
        if arg == OPTION or arg.startswith(OPTION + "="):
            if arg == OPTION and i + 1 >= len(args):
                raise InputError.single(
                    "command line", OPTION, "nothing", "a folder (a catalog overlay)"
                )
            value = arg.split("=", 1)[1] if "=" in arg else args[i + 1]
            if folder is not None and value != folder:
                raise InputError.single(
                    "command line", OPTION, f"{folder!r} and {value!r}", "one folder"
                )
            folder = value
            i += 1 if "=" in arg else 2
            continue
        rest.append(arg)
        i += 1
    return rest, folder


def apply_catalog_dir(folder: str) -> None:
    """Check the folder, make it the run's overlay, say which shipped entries it replaces."""
    from pdd_plan.loaders.catalog import catalog_dir
    from pdd_plan.loaders.catalog_overlay import overlay_notes, use_catalog_dir

    overlay = use_catalog_dir(folder)
    for note in overlay_notes(catalog_dir(), overlay):
        sys.stderr.write(f"note: {note}\n")
