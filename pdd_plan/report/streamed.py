"""An output file written piece by piece, still all or nothing (report/files.py's rules):
`-` is standard output; a FIFO or character device is written straight through; anything
else goes to a temporary file beside the final target (0o666 less the umask, or the mode
of the file it replaces), synced and renamed over it only when the writing ends without
an error or an interrupt, which otherwise remove it."""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO

from pdd_plan.report.files import (
    STDOUT,
    WRITTEN,
    keep_mode_and_owner,
    new_file,
    resolved,
    sync_folder,
    temp_sibling,
    write_error,
    writes_through,
)


@contextlib.contextmanager
def streamed_text(path: Path | str) -> Iterator[TextIO]:
    """A UTF-8 text handle whose content replaces `path` when the block ends cleanly."""
    if str(path) == STDOUT:
        yield sys.stdout
        sys.stdout.flush()
        WRITTEN.append(str(path))
        return
    target = resolved(path)
    try:
        info = _stat_or_none(target)
        if info is not None and stat.S_ISDIR(info.st_mode):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
        if info is not None and writes_through(info.st_mode):
            handle = open(target, "w", encoding="utf-8", newline="")  # noqa: SIM115
            with handle:
                yield handle
        else:
            with _replacing(target, info) as handle:
                yield handle
    except OSError as exc:
        raise write_error(path, exc) from None
    WRITTEN.append(str(path))


def _stat_or_none(target: Path) -> os.stat_result | None:
    try:
        return os.stat(target)
    except FileNotFoundError:
        return None


@contextlib.contextmanager
def _replacing(target: Path, old: os.stat_result | None) -> Iterator[TextIO]:
    tmp = temp_sibling(target.parent, lambda p: os.close(new_file(p)))
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CLOEXEC)
        with open(fd, "w", encoding="utf-8", newline="") as handle:
            keep_mode_and_owner(fd, old)
            yield handle
            handle.flush()
            os.fsync(fd)
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    sync_folder(target.parent)
