"""Every output path checked before any work: a refusal costs nothing, a late one costs the
whole computation. One `error:` line (exit 2) names the option, the path and what is wrong.

Refused: an output that is the same file as an input (through links and hard links) or as
another output, compared by identity (device and inode), or by the path the kernel
resolves for one not there yet; the inputs are the command line's and every file the run
has opened, and the files it opens later are checked as they are opened (output_guard.py);
a folder given as a file, or a file path ending in `/` (a folder path); a path through a
missing folder (resolved as the kernel does: `missing/../x` fails, it is not `x`), or
through a file; a read-only file or folder, by its mode bits (the write bit of the owner,
group or others that applies; as root, which every write probe lets through, the owner's);
a folder that cannot take a new file (probed by creating one, so a read-only file system
shows too); a name longer than the file system allows; a block device or socket.
`--out DIR` must be new, empty, or an earlier pdd-plan output folder (only the files a run
writes), since it is replaced whole; it may not hold an input or another output, and an
existing one without its owner's write bit (chmod a-w) is refused, as a file is. Last, a
file whose extension names a format its option does not write (output_formats.py).
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterable, Mapping
from pathlib import Path

from pdd_plan.cli import output_guard
from pdd_plan.cli.output_formats import Formats, output_formats
from pdd_plan.cli.output_guard import holds, identity
from pdd_plan.errors import InputError
from pdd_plan.loaders.input_files import opened_inputs
from pdd_plan.report.files import (
    STDOUT,
    new_file,
    resolved,
    standard_stream,
    temp_sibling,
    writes_through,
)

_PLOTS = ("bathtub", "pareto", "composition", "cost", "bcr")
RUN_FILES = frozenset(
    {"plan.json", "bom.csv", "scenario.json", "run.json", "report.md", "sweep.csv", "sweep.json"}
    | {f"{name}.{ext}" for name in _PLOTS for ext in ("svg", "png")}
    | {".sweep-journal.jsonl"}  # an unfinished sweep's journal (sweep_journal.py)
)  # what `solve --out` and `sweep --out` write: a folder of only these may be replaced


def check_outputs(
    inputs: Iterable[str | os.PathLike | None] = (),
    files: Mapping[str, str | os.PathLike | None] | None = None,
    folders: Mapping[str, str | os.PathLike | None] | None = None,
    *,
    formats: Mapping[str, Formats] | None = None,
) -> dict[str, str]:
    """Refuse (InputError) the first output path in `files` / `folders` (option -> path,
    None when not given) that cannot be written or would replace an input, or whose
    extension names a format its option (in `formats`) does not write. Returns each
    file's format: option -> format (output_formats.py), for the options of `formats`."""
    sources = [str(p) for p in inputs if p is not None and os.path.exists(p)]
    sources += [p for p in opened_inputs().values() if p not in sources]
    files = {k: str(v) for k, v in (files or {}).items() if v is not None}
    folders = {k: str(v) for k, v in (folders or {}).items() if v is not None}
    for option, path in files.items():
        _check_file(option, path)
    for option, path in folders.items():
        _check_not_inside(option, path, sources, files)
        _check_folder(option, path)
    _check_distinct(sources, {**files, **folders})
    chosen = output_formats(files, formats or {})
    output_guard.declare(files, folders)
    return chosen


def _refuse(path: str, option: str, found: str, expected: str) -> InputError:
    return InputError.single(path, option, found, expected)


def _check_file(option: str, path: str) -> None:
    if not path:
        raise _refuse("command line", option, "an empty path", "a file path, or - for stdout")
    if standard_stream(path) is not None:
        return
    if _names_a_folder(path):
        raise _refuse(path, option, "a path ending in a folder (a trailing / or a final . or "
                      "..)", "a file path (name a file inside the folder)")  # fmt: skip
    info = _stat(option, path)
    if info is None:
        _check_parent(option, path)
    elif stat.S_ISDIR(info.st_mode):
        raise _refuse(path, option, "a folder", "a file path (name a file inside the folder)")
    elif writes_through(info.st_mode):
        if not os.access(path, os.W_OK):
            raise _refuse(path, option, "a FIFO or device it cannot write to", "a writable one")
    elif stat.S_ISREG(info.st_mode):
        if _read_only(info, resolved(path)):  # the rename could, but `>` would not
            mode = f"mode {stat.S_IMODE(info.st_mode):04o}"
            raise _refuse(path, option, f"a read-only file ({mode})", "a file it may replace")
        _check_parent(option, path)
    else:
        raise _refuse(path, option, "a socket or block device", "a regular file, FIFO or -")


def _names_a_folder(path: str) -> bool:
    """`x/`, `x/.` or `x/..`: the kernel opens such a path only as a folder."""
    return path.endswith(os.sep) or os.path.basename(path) in (".", "..")


def _read_only(info: os.stat_result, path: Path) -> bool:
    """No write permission by the mode bits: the bit of the class the process falls in by
    ownership (owner, group, others) is off, or the system says no (ACLs, a read-only
    mount). Root passes every permission check, so for root the owner's bit decides: a
    file or folder chmod a-w is refused for everyone."""
    if os.geteuid() == 0:
        return not info.st_mode & stat.S_IWUSR
    if info.st_uid == os.geteuid():
        bit = stat.S_IWUSR
    elif info.st_gid == os.getegid() or info.st_gid in os.getgroups():
        bit = stat.S_IWGRP
    else:
        bit = stat.S_IWOTH
    return not info.st_mode & bit or not os.access(path, os.W_OK)


def _check_folder(option: str, path: str) -> None:
    if path in ("", STDOUT):
        raise _refuse("command line", option, repr(path), "a folder path")
    info = _stat(option, path)
    if info is not None and not stat.S_ISDIR(info.st_mode):
        raise _refuse(path, option, "a file", "a folder path (new, empty, or an earlier run's)")
    if info is not None and _read_only(info, resolved(path)):
        mode = f"mode {stat.S_IMODE(info.st_mode):04o}"
        raise _refuse(path, option, f"a read-only folder ({mode})",
                      "a folder it may replace (chmod u+w), or another path")  # fmt: skip
    if info is not None:
        foreign = _foreign_entries(resolved(path))
        if foreign:
            shown = ", ".join(foreign[:3]) + (", ..." if len(foreign) > 3 else "")
            raise _refuse(
                path,
                option,
                f"a folder holding other files ({shown})",
                "a new or empty folder, or an earlier pdd-plan output folder (it is replaced "
                "whole, so a run folder never mixes two runs)",
            )
    _check_parent(option, path)


def _foreign_entries(folder: Path) -> list[str]:
    """Entries that are not a file an earlier run wrote (these would be lost)."""
    entries = sorted(os.scandir(folder), key=lambda e: e.name)
    return [
        e.name for e in entries if e.name not in RUN_FILES or not e.is_file(follow_symlinks=False)
    ]


def _stat(option: str, path: str) -> os.stat_result | None:
    """The final target's status, None when it does not exist yet."""
    try:
        return os.stat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise _path_error(option, path, exc) from None


def _check_parent(option: str, path: str) -> None:
    """The folder the target lands in exists (as the kernel resolves the path), is a
    folder, is not read-only by its mode, takes a new file, and the name fits the file
    system."""
    try:
        target = landing(path)
    except OSError as exc:
        raise _path_error(option, path, exc) from None
    if target != resolved(path):  # the writer resolves with realpath: never elsewhere
        raise _refuse(path, option, f"a path the kernel resolves to {target}",
                      f"a path without `..` after a link ({resolved(path)})")  # fmt: skip
    parent = target.parent
    try:
        info = os.stat(parent)
    except OSError as exc:
        raise _path_error(option, path, exc) from None
    if not stat.S_ISDIR(info.st_mode):
        raise _refuse(path, option, f"a path under {parent}, which is a file", "a folder")
    if _read_only(info, parent):
        mode = f"mode {stat.S_IMODE(info.st_mode):04o}"
        raise _refuse(path, option, f"a read-only folder ({parent}: {mode})",
                      "a folder it may write in (chmod u+w), or another path")  # fmt: skip
    name_max = _name_max(parent)
    if len(os.fsencode(target.name)) > name_max:
        size = len(os.fsencode(target.name))
        raise _refuse(path, option, f"a file name of {size} bytes", f"at most {name_max} bytes")
    try:  # create and remove a file there: the only test that holds for root and read-only mounts
        temp_sibling(parent, lambda p: os.close(new_file(p))).unlink()
    except OSError as exc:
        raise _refuse(
            path,
            option,
            f"a folder it cannot write to ({parent}: {exc.strerror})",
            "a writable folder",
        ) from None


def landing(path: str) -> Path:
    """Where a write to `path` lands, resolved as the kernel resolves it: the folder part
    must exist as written (`missing/../x` fails with ENOENT, where a lexical `..` would
    give `x`), and a link at the end is followed to its target (a dangling one creates
    it), hop by hop, up to the kernel's 40. OSError as the kernel would raise it."""
    current = path.rstrip(os.sep) or os.sep
    for _ in range(40):
        head, name = os.path.split(current)
        folder = os.path.realpath(head or os.curdir, strict=True)
        if not os.path.isdir(folder):
            raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), head)
        target = os.path.join(folder, name)
        try:
            info = os.lstat(target)
        except FileNotFoundError:
            return Path(target)
        if not stat.S_ISLNK(info.st_mode):
            return Path(os.path.realpath(target, strict=True))
        current = os.path.join(folder, os.readlink(target))
    raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), path)


def _name_max(folder: Path) -> int:
    try:
        return os.pathconf(folder, "PC_NAME_MAX")
    except (OSError, ValueError):
        return 255


def _path_error(option: str, path: str, exc: OSError) -> InputError:
    if exc.errno == errno.ENOENT:
        missing = _first_missing(path)
        return _refuse(
            path, option, f"a folder that does not exist ({missing})", "an existing folder"
        )
    if exc.errno == errno.ENOTDIR:
        blocker = _first_file(resolved(path))
        return _refuse(path, option, f"a path under {blocker}, which is a file", "a folder there")
    if exc.errno == errno.ELOOP:
        return _refuse(path, option, "a loop of symbolic links", "a path that resolves")
    if exc.errno == errno.ENAMETOOLONG:
        return _refuse(path, option, "a name too long for the file system", "a shorter name")
    return _refuse(path, option, f"{exc.strerror} (errno {exc.errno})", "a path it can write")


def _first_missing(path: str) -> str:
    """The first folder of `path`, as written, that the kernel cannot find (the one to
    create): `../missing` of `../missing/../x.csv`."""
    parts = Path(path.rstrip(os.sep) or os.sep).parts
    for end in range(1, len(parts)):
        prefix = os.path.join(*parts[:end])
        if not os.path.exists(prefix):
            return prefix
    return os.path.dirname(path) or os.curdir


def _first_file(path: Path) -> Path:
    """The ancestor of `path` that is a file, making the path impossible."""
    for ancestor in reversed(path.parents):
        if ancestor.exists() and not ancestor.is_dir():
            return ancestor
    return path.parent


def _check_distinct(sources: list[str], outputs: Mapping[str, str]) -> None:
    """No output replaces an input, and no two outputs are one file (by identity: hard
    links of one file, or two names of it; by the resolved path for one not there yet)."""
    seen: dict[object, str] = {}
    for option, path in outputs.items():
        if standard_stream(path) is not None:
            continue
        for source in sources:
            if _same(source, path):
                raise _refuse(
                    path,
                    option,
                    f"the same file as the input {source}",
                    "a different path (writing it would replace the input)",
                )
        target = identity(path) or resolved(path)
        if target in seen:
            raise _refuse(path, option, f"the same file as {seen[target]}", "a different path")
        seen[target] = option


def _same(source: str, path: str) -> bool:
    if resolved(source) == resolved(path):
        return True
    try:
        return os.path.samefile(source, path)  # hard links and bind mounts too
    except OSError:
        return False


def _check_not_inside(option: str, folder: str, sources: list[str], files: Mapping[str, str]):
    """A folder replaced whole must not hold an input or another output."""
    if folder in ("", STDOUT):
        return  # refused as a folder path by _check_folder
    named = [(s, "the input") for s in sources] + [(p, o) for o, p in files.items() if p != STDOUT]
    for path, what in named:
        if holds(folder, path):
            raise _refuse(
                folder,
                option,
                f"a folder holding {what} {path}",
                "a folder apart from the inputs and other outputs (it is replaced whole)",
            )
