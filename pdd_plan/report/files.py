"""Output files, all or nothing.

- `-` is standard output, and so is a path to the file, pipe or terminal that standard
  output (or error) already is (`/dev/stdout`): written through the stream.
- A symbolic link is followed (through a chain) and its final target is replaced; the
  link stays a link. A dangling link creates its target, as the shell's `>` would.
- A FIFO or a character device is written straight through, with no temporary file and
  no rename: renaming over it would break its reader (as root, it would replace a device
  node for the whole machine).
- Anything else gets a temporary file beside the final target with a short fixed-length
  name (so any legal file name works), created with mode 0o666 less the umask like a plain
  `open` (or with the mode of the file it replaces), synced, then renamed over the target.
- A folder is built whole in a fresh sibling and swapped in; the folder it replaces is
  removed only after the new one is in place, so a run folder never mixes two runs.
An interrupted write leaves the target as it was. A failed write is an `InputError`.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import secrets
import shutil
import stat
import sys
from collections.abc import Mapping
from pathlib import Path

from pdd_plan.errors import InputError

STDOUT = "-"
# every output this process wrote whole, as named, in order: after an interrupt the CLI
# says which outputs were written (cli/output_guard.py)
WRITTEN: list[str] = []
_WRITE_THROUGH = (stat.S_ISFIFO, stat.S_ISCHR)


def resolved(path: Path | str) -> Path:
    """The file a write to `path` lands in: every symbolic link followed."""
    return Path(os.path.realpath(path))


def writes_through(mode: int) -> bool:
    """Whether a file of this `st_mode` is written in place (FIFO, character device)."""
    return any(test(mode) for test in _WRITE_THROUGH)


def temp_sibling(folder: Path, make) -> Path:
    """A fresh name in `folder` made with `make(path)` (which must fail if it exists):
    21 characters whatever the target's name, so a 255-character name still works."""
    for _ in range(100):
        path = folder / f".pdd-{secrets.token_hex(6)}.tmp"
        try:
            make(path)
            return path
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no free temporary name", str(folder))


def new_file(path: Path) -> int:
    """Create `path` (it must not exist) for writing, 0o666 less the umask."""
    return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _as_bytes(data: str | bytes) -> bytes:
    return data if isinstance(data, bytes) else data.encode("utf-8")


def sync_folder(folder: Path) -> None:
    """Make a rename durable; some file systems cannot sync a folder, which is harmless."""
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def write_error(path: Path | str, exc: OSError) -> InputError:
    reason = exc.strerror or type(exc).__name__
    return InputError.single(
        str(path), "", f"{reason} (errno {exc.errno}) while writing", "a file path it can write"
    )


def standard_stream(path: Path | str):
    """The standard stream `path` names, else None: `-` is stdout, and so is any path to
    the very file, pipe or terminal stdout (or stderr) is: /dev/stdout, or a link to the file
    the shell redirected stdout to. Such a path is written through the stream, in order with
    what the command prints, never replaced behind the shell's back."""
    if str(path) == STDOUT:
        return sys.stdout
    try:
        info = os.stat(path)
    except (OSError, ValueError):
        return None
    for stream in (sys.stdout, sys.stderr):
        try:
            fd_info = os.fstat(stream.fileno())
        except (OSError, ValueError, AttributeError):  # a stream without a descriptor
            continue
        if (fd_info.st_dev, fd_info.st_ino) == (info.st_dev, info.st_ino):
            return stream
    return None


def write_atomic(path: Path | str, text: str | bytes) -> None:
    """Write text (UTF-8) or bytes to `path` whole or not at all (see the module's rules)."""
    data = _as_bytes(text)
    try:
        stream = standard_stream(path)
        if stream is not None:
            stream.flush()
            stream.buffer.write(data)
            stream.buffer.flush()
            WRITTEN.append(str(path))
            return
        try:
            info = os.stat(path)  # follows every link, /proc's magic ones too
        except FileNotFoundError:
            info = None
        if info is not None and stat.S_ISDIR(info.st_mode):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
        if info is not None and writes_through(info.st_mode):
            with open(path, "wb") as handle:
                handle.write(data)
        else:
            _replace(resolved(path), data, info)
    except OSError as exc:
        raise write_error(path, exc) from None
    WRITTEN.append(str(path))


def _replace(target: Path, data: bytes, old: os.stat_result | None) -> None:
    tmp = temp_sibling(target.parent, lambda p: os.close(new_file(p)))
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CLOEXEC)
        try:
            keep_mode_and_owner(fd, old)
            _write_all(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    sync_folder(target.parent)


def keep_mode_and_owner(fd: int, old: os.stat_result | None) -> None:
    """A file that replaces `old` keeps its mode (and, as root, its owner)."""
    if old is None:
        return
    os.fchmod(fd, stat.S_IMODE(old.st_mode))
    if os.geteuid() == 0 and (old.st_uid, old.st_gid) != (0, 0):
        with contextlib.suppress(OSError):
            os.fchown(fd, old.st_uid, old.st_gid)


def write_folder(path: Path | str, contents: Mapping[str, str | bytes]) -> None:
    """Make `path` a folder holding exactly `contents` (name -> text or bytes; a name may
    hold subfolders, `dc_a/x.yaml`): built in a fresh sibling, then swapped in whole; an
    existing folder is removed only afterwards."""
    target = resolved(path)
    try:
        old = os.stat(target) if target.exists() else None
        tmp = temp_sibling(target.parent, lambda p: os.mkdir(p, 0o777))
    except OSError as exc:
        raise write_error(path, exc) from None
    try:
        if old is not None:
            os.chmod(tmp, stat.S_IMODE(old.st_mode))
        for name, data in contents.items():
            _make_parents(tmp, name)
            fd = new_file(tmp / name)
            try:
                _write_all(fd, _as_bytes(data))
                os.fsync(fd)
            finally:
                os.close(fd)
        sync_folder(tmp)
        _swap_in(tmp, target, old is not None)
    except OSError as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        raise write_error(path, exc) from None
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    WRITTEN.append(str(path))


def _make_parents(folder: Path, name: str) -> None:
    """`name` may hold subfolders (`dc_a/x.yaml`, as `deploy` writes one per datacenter):
    created inside the new folder, never outside it (no absolute path, no `..`)."""
    parts = Path(name).parts
    if Path(name).is_absolute() or ".." in parts or not parts:
        raise ValueError(f"a file name inside the folder, not {name!r}")
    if len(parts) > 1:
        (folder / Path(*parts[:-1])).mkdir(parents=True, exist_ok=True)


def _swap_in(new: Path, target: Path, exists: bool) -> None:
    """Put folder `new` at `target`; after an exchange `new` holds the old folder, which is
    then removed (an interrupt at that point leaves only a hidden sibling behind)."""
    if not exists:
        os.rename(new, target)
    elif _exchange(new, target):
        shutil.rmtree(new, ignore_errors=True)
    else:  # no atomic exchange here: the old folder steps aside for a moment
        aside = temp_sibling(target.parent, lambda p: os.mkdir(p, 0o700))
        os.rename(target, aside)
        try:
            os.rename(new, target)
        except BaseException:
            os.rename(aside, target)
            raise
        shutil.rmtree(aside, ignore_errors=True)
    sync_folder(target.parent)


def _exchange(a: Path, b: Path) -> bool:
    """Swap two paths atomically with Linux's renameat2(RENAME_EXCHANGE); False where the
    C library or the file system does not offer it."""
    try:
        renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        return False
    renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p]
    renameat2.argtypes += [ctypes.c_uint]
    at_fdcwd, rename_exchange = -100, 2
    if renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
        return False
    raise OSError(code, os.strerror(code), str(b))
