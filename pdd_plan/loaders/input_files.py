"""Opening a user's input file: the one bounded way every reader takes.

The file is opened non-blocking and checked with `fstat` on the open descriptor (so a
FIFO never blocks and a path swapped between a check and the open cannot slip through):
only a regular file is read, never a device (`/dev/zero` would be read until memory runs
out) or a named pipe. Whole-file reads stop at a cap per kind of file. Every `OSError`
of the path (too long, a mode-000 file, a path through a regular file, a link loop) is
one InputError line.
"""

from __future__ import annotations

import errno
import io
import os
import stat
from collections.abc import Callable
from pathlib import Path

from pdd_plan.errors import InputError

MIB = 1024 * 1024
SHOWN_PATH_CHARS = 160  # a path longer than this is shortened in messages

_ERRNO_FOUND = {
    errno.ENOENT: "no such file",
    errno.ENOTDIR: "a path through something that is not a directory",
    errno.ENAMETOOLONG: "a path too long for the file system",
    errno.EACCES: "a file it may not read (permission denied)",
    errno.EPERM: "a file it may not read (operation not permitted)",
    errno.ELOOP: "a loop of symbolic links",
    errno.EISDIR: "a directory",
}
_KIND_FOUND = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a named pipe (FIFO)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


class _Run:
    """What this command has opened: off (library use, nothing kept) until `begin_run`."""

    recording = False
    opened: dict[tuple[int, int], str] = {}  # (device, inode) -> the path it was opened by
    check: Callable[[str, os.stat_result], None] | None = None


def begin_run() -> None:
    """A command starts: record every input it opens from now on (cli/app.py)."""
    _Run.recording, _Run.opened, _Run.check = True, {}, None


def end_run() -> None:
    """The command is over: nothing recorded or checked any more."""
    _Run.recording, _Run.opened, _Run.check = False, {}, None


def opened_inputs() -> dict[tuple[int, int], str]:
    """The inputs opened so far in this command, by (device, inode)."""
    return dict(_Run.opened)


def watch_opens(check: Callable[[str, os.stat_result], None] | None) -> None:
    """From now on every input opened is shown to `check(path, its fstat)` first, which
    raises to refuse it (None: back to recording)."""
    _Run.check = check


def _opened(path: Path | str, info: os.stat_result) -> None:
    if _Run.check is not None:
        _Run.check(str(path), info)
    elif _Run.recording:
        _Run.opened.setdefault((info.st_dev, info.st_ino), str(path))


def shown_path(path: Path | str) -> str:
    """The path as messages name it: whole unless absurdly long (one readable line)."""
    text = str(path)
    if len(text) <= SHOWN_PATH_CHARS:
        return text
    return f"{text[:60]}...({len(text):,} characters)...{text[-80:]}"


def os_error(path: Path | str, exc: OSError, what: str) -> InputError:
    """An OSError met reading `path` as one InputError line."""
    found = _ERRNO_FOUND.get(exc.errno, f"an unreadable file ({exc.strerror or exc})")
    if exc.errno == errno.ENAMETOOLONG:
        found += f" ({len(str(path)):,} characters; a name may have 255 bytes, a path 4,096)"
    return InputError.single(shown_path(path), "", found, what)


def open_input(path: Path | str, what: str) -> io.BufferedReader:
    """`path` opened for binary reading, after checking it is a regular file."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except (OSError, ValueError) as exc:  # ValueError: a NUL byte in the path
        if isinstance(exc, ValueError):
            raise InputError.single(shown_path(path), "", "a path with a NUL byte", what) from None
        raise os_error(path, exc, what) from None
    try:
        info = os.fstat(fd)
        mode = info.st_mode
        if not stat.S_ISREG(mode):
            found = next((text for test, text in _KIND_FOUND if test(mode)), "a special file")
            raise InputError.single(shown_path(path), "", found, f"{what} (a regular file)")
        _opened(path, info)
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_input_bytes(path: Path | str, what: str, max_bytes: int) -> bytes:
    """The whole of a regular file, refused (before reading it) when over `max_bytes`."""
    with open_input(path, what) as handle:
        try:
            size = os.fstat(handle.fileno()).st_size
            data = b"" if size > max_bytes else handle.read(max_bytes + 1)
        except OSError as exc:
            raise os_error(path, exc, what) from None
    if size > max_bytes or len(data) > max_bytes:  # a file that grew while read counts too
        found = f"{max(size, len(data)):,} bytes"
        expected = f"{what} of at most {size_text(max_bytes)}"
        raise InputError.single(shown_path(path), "", found, expected)
    return data


def size_text(n_bytes: int) -> str:
    """`2 MiB (2,097,152 bytes)`: the cap as a reader states it."""
    unit, name = (MIB, "MiB") if n_bytes >= MIB else (1024, "KiB")
    return f"{n_bytes / unit:g} {name} ({n_bytes:,} bytes)"


def path_exists(path: Path | str) -> bool:
    """`Path.exists` that says False, not raises, for a path the system cannot look up
    (too long, a component that is not a directory): the reader then names the problem."""
    try:
        os.stat(path)
    except (OSError, ValueError):
        return False
    return True


def utf8_text(raw: bytes, name: str, what: str, empty_expected: str = "") -> str:
    """The text of an input's bytes: binary (NUL bytes), non-UTF-8 or blank is one line."""
    if b"\x00" in raw:
        raise InputError.single(name, "", "binary data (NUL bytes)", f"{what} (UTF-8 text)")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        found = f"bytes that are not UTF-8 (at byte {exc.start})"
        raise InputError.single(name, "", found, what) from None
    if not text.strip():
        raise InputError.single(name, "", "an empty file", empty_expected or what)
    return text
