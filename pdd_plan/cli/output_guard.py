"""The outputs a command declared, kept for the whole run (issue #22 item 10).

- Every input the run opens after its outputs were checked (a scenario's `model_file` or
  `engine.profile`, a plan, the catalog, a trace) is shown to `_refuse_if_output` before
  a byte is read (loaders/input_files.py calls back): one that is an output, or lies
  inside an `--out` folder, is refused (exit 2) before any work, since writing the output
  would replace it. Compared by identity (device and inode, so hard links and other
  names count), and by the path the kernel resolves for an output not there yet.
- After an interrupt, `written_note` says which outputs were written whole before it
  (report/files.py's `WRITTEN`) and which were not.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

from pdd_plan.errors import InputError
from pdd_plan.loaders import input_files

STDOUT = "-"


@dataclass(frozen=True)
class Declared:
    option: str
    path: str
    folder: bool  # an `--out` folder, replaced whole


_declared: list[Declared] = []


def begin_run() -> None:
    """A command starts (cli/app.py): no output declared, nothing written yet, every
    input it opens recorded."""
    _declared.clear()
    input_files.begin_run()
    files = sys.modules.get("pdd_plan.report.files")  # not imported: nothing written
    if files is not None:
        files.WRITTEN.clear()


def end_run() -> None:
    """The command is over: the process (a test, a library caller) reads files freely
    again."""
    _declared.clear()
    input_files.end_run()


def declare(files: dict[str, str], folders: dict[str, str]) -> None:
    """The outputs of the command (option -> path), checked already: from now on every
    input opened is compared with them."""
    _declared.extend(Declared(o, p, False) for o, p in files.items() if p != STDOUT)
    _declared.extend(Declared(o, p, True) for o, p in folders.items())
    input_files.watch_opens(_refuse_if_output if _declared else None)


def identity(path: str | Path) -> tuple[int, int] | None:
    """(device, inode) of what `path` names now (links followed), None if nothing."""
    try:
        info = os.stat(path)
    except (OSError, ValueError):
        return None
    return info.st_dev, info.st_ino


def holds(folder: str | Path, path: str | Path) -> bool:
    """Whether `path` is `folder` or lies under it, by identity: every folder on the way
    from `path` up to the root is compared with `folder` (another name for it, a link
    to it or a bind mount all count)."""
    target = identity(folder)
    if target is None:
        return Path(os.path.realpath(folder)) in _with_parents(path)
    return any(identity(p) == target for p in _with_parents(path))


def _with_parents(path: str | Path) -> list[Path]:
    real = Path(os.path.realpath(path))
    return [real, *real.parents]


def _refuse_if_output(path: str, info: os.stat_result) -> None:
    """Called with each input as it is opened (its fstat): refuse one an output would
    replace."""
    opened = (info.st_dev, info.st_ino)
    for d in _declared:
        if d.folder:
            if holds(d.path, path):
                raise InputError.single(
                    d.path, d.option, f"a folder holding the input {path} (read by this run)",
                    "a folder apart from the inputs (it is replaced whole)",
                )  # fmt: skip
        elif identity(d.path) == opened or _same_name(d.path, path):
            raise InputError.single(
                d.path, d.option, f"the same file as the input {path} (read by this run)",
                "a different path (writing it would replace the input)",
            )  # fmt: skip


def _same_name(output: str, path: str) -> bool:
    return os.path.realpath(output) == os.path.realpath(path)


def written_note() -> str:
    """What an interrupted command wrote: '' when it declared no output."""
    if not _declared:
        return ""
    files = sys.modules.get("pdd_plan.report.files")
    done = {os.path.abspath(p) for p in (files.WRITTEN if files is not None else ())}
    shown = [(f"{d.option} {d.path}", os.path.abspath(d.path) in done) for d in _declared]
    written = [name for name, ok in shown if ok]
    missing = [name for name, ok in shown if not ok]
    if not missing:
        return f"after every output was written whole ({', '.join(written)})"
    if not written:
        return f"before any output was written ({', '.join(missing)} not written)"
    return f"after writing {', '.join(written)} whole; not written: {', '.join(missing)}"
