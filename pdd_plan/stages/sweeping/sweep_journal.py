"""The journal of a sweep written to `--out DIR`: one JSON line per finished point, so that
an interrupted sweep (Ctrl-C, a killed process, a lost machine) loses no finished point and
`--resume` runs only the rest.

Where it lives: `DIR/.sweep-journal.jsonl`, inside the output folder, created with it. The
final files are still swapped in whole (`report.files.write_folder`), and the new folder does
not hold the journal, so a finished run's folder holds exactly its own files; until then, a
previous run's files stay as they were beside the journal of the run that will replace them.

Format: the first line is a header `{"journal": "pdd-plan sweep", "format": 1, "key": K,
"points": N}` where K is the SHA-256 of everything that decides a point's row (`sweep_key`);
each further line is one point's row as the sweep returns it. Each line is written with
one append and fsynced. A last line cut short by a kill is dropped (that point runs again)
and a resumed run appends to the same journal; a sweep run without `--resume` starts a new
one (with a note). The file is locked (flock) while a sweep writes it, so two sweeps cannot
share a folder. Every row, new or resumed, passes through JSON (`as_stored`), so a resumed
sweep's files are byte for byte an uninterrupted one's, wall times aside.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
from pathlib import Path

from pdd_plan import __version__
from pdd_plan.errors import InputError
from pdd_plan.loaders.catalog_overlay import overlay_dir
from pdd_plan.loaders.engine_profile import OVERRIDE_ENV
from pdd_plan.loaders.prices_apply import PRICES_ENV
from pdd_plan.report.files import resolved, write_error

JOURNAL_NAME = ".sweep-journal.jsonl"
FORMAT = 1
_MAGIC = "pdd-plan sweep"


def _file_digest(path: Path | str | None) -> str | None:
    if path is None:
        return None
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError:
        return None


def _catalog_digest(root: Path) -> str:
    """Every catalog file, by relative path and bytes (a point may vary the model or GPU)."""
    digest = hashlib.sha256()
    for path in sorted(p for p in Path(root).rglob("*") if p.is_file()):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()


def _scenario_profile(data: dict, label: str) -> str | None:
    engine = data.get("engine")
    profile = engine.get("profile") if isinstance(engine, dict) else None
    if not isinstance(profile, str):
        return None
    return _file_digest(Path(label).parent / Path(profile).expanduser())


def sweep_key(sweep, catalog_root: Path) -> str:
    """SHA-256 of what decides every row: the version, the scenario (its path, as errors
    name it, and its parsed content with the objective override), the axes, the
    architecture, the plan file's bytes, the resolution, the time limit, the engine
    profiles' bytes and the catalog's files."""
    parts = {
        "version": __version__,
        "scenario": sweep.label,
        "data": sweep.data,
        "axes": [[a.key, list(a.values)] for a in sweep.axes],
        "architecture": sweep.architecture,
        "plan": [sweep.plan_path, _file_digest(sweep.plan_path)],
        "resolution": list(sweep.resolution),
        "time_limit_s": sweep.time_limit_s,
        "engine_profile": _file_digest(os.environ.get(OVERRIDE_ENV)),
        "scenario_profile": _scenario_profile(sweep.data, sweep.label),
        "catalog": _catalog_digest(catalog_root),
    }
    # added only when used, so the keys of journals written without them stay the same
    overlay = overlay_dir()
    if overlay is not None:
        parts["catalog_overlay"] = _catalog_digest(overlay)
    if os.environ.get(PRICES_ENV):  # --prices: another quote file is another sweep
        parts["prices"] = _file_digest(os.environ[PRICES_ENV])
    model_file = sweep.data.get("model_file") if isinstance(sweep.data, dict) else None
    if isinstance(model_file, str):
        parts["model_file"] = _file_digest(Path(sweep.label).parent / Path(model_file).expanduser())
    text = json.dumps(parts, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def as_stored(row: dict) -> dict:
    """`row` as the journal gives it back (a JSON round trip): every row of a sweep goes
    through this, so a resumed sweep's files are byte for byte an uninterrupted one's."""
    return json.loads(json.dumps(row))


def _line(obj: dict) -> bytes:
    return (json.dumps(obj, separators=(",", ":")) + "\n").encode()


class Journal:
    """An open journal: `append(row)` writes one point durably; `close()` unlocks it."""

    def __init__(self, path: Path, fd: int):
        self.path = path
        self._fd = fd

    def append(self, row: dict) -> None:
        data = _line(row)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(self._fd, view) :]
            os.fsync(self._fd)
        except OSError as exc:
            raise write_error(self.path, exc) from None

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


def journal_path(folder: Path | str) -> Path:
    return resolved(folder) / JOURNAL_NAME


def _mismatch(path: Path, found: str, expected: str) -> InputError:
    return InputError.single(str(path), "--resume", found, expected,
                             "run without --resume to start the sweep over")  # fmt: skip


def read_rows(path: Path, data: bytes, key: str, points: tuple) -> tuple[dict[int, dict], int]:
    """The finished rows of journal `data` (index -> row), after checking that it is the
    journal of this very sweep (`key`), and the length of its whole lines (a last line cut
    short by a kill is dropped: that point runs again)."""
    complete = data.split(b"\n")[:-1]  # a whole line ends with "\n"
    try:
        header = json.loads(complete[0]) if complete else None
    except ValueError:
        header = None
    if not isinstance(header, dict) or header.get("journal") != _MAGIC:
        raise _mismatch(path, "a file that is not a sweep journal", "a pdd-plan sweep journal")
    if header.get("key") != key or header.get("format") != FORMAT:
        raise _mismatch(path, "the journal of a different sweep (the scenario, axes, "
                        "objective, plan, catalog or version differ)",
                        "the journal of the same sweep")  # fmt: skip
    rows: dict[int, dict] = {}
    for number, raw in enumerate(complete[1:], start=2):
        rows.update(_stored_row(path, number, raw, points))
    return rows, sum(len(line) + 1 for line in complete)


def _stored_row(path: Path, number: int, raw: bytes, points: tuple) -> dict[int, dict]:
    try:
        row = json.loads(raw)
        index = row["index"]
        ok = isinstance(index, int) and 0 <= index < len(points)
        ok = ok and row["values"] == as_stored(dict(points[index]))
    except (ValueError, TypeError, KeyError):
        ok = False
    if not ok:
        raise _mismatch(path, f"line {number} that is not a row of this sweep",
                        "one finished point a line")  # fmt: skip
    return {index: row}


def open_journal(folder: Path | str, key: str, points: tuple, resume: bool):
    """(the journal to append to, the rows already finished, whether an unfinished
    journal was replaced). With `resume`, the journal in `folder` is checked and continued
    (none there: every point runs); else a fresh one replaces any there. `folder` is
    created when missing; the journal stays locked until `close`."""
    path = journal_path(folder)
    try:
        path.parent.mkdir(exist_ok=True)
        fd = _locked(path)
    except OSError as exc:
        raise write_error(path, exc) from None
    try:
        old = _read_all(fd)
        if resume and old:
            done, whole = read_rows(path, old, key, points)
            os.ftruncate(fd, whole)  # appending after a torn line would join the two
            return Journal(path, fd), done, False
        os.ftruncate(fd, 0)
        journal = Journal(path, fd)
        journal.append({"journal": _MAGIC, "format": FORMAT, "key": key, "points": len(points)})
        return journal, {}, bool(old)
    except BaseException as exc:
        os.close(fd)
        if isinstance(exc, OSError):
            raise write_error(path, exc) from None
        raise


def _read_all(fd: int) -> bytes:
    chunks = []
    while chunk := os.pread(fd, 1 << 20, sum(len(c) for c in chunks)):
        chunks.append(chunk)
    return b"".join(chunks)


def _locked(path: Path) -> int:
    """`path` opened to append (created 0o666 less the umask), with an exclusive lock."""
    flags = os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW
    fd = os.open(path, flags, 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise InputError.single(str(path), "--out", "a sweep journal another sweep is writing",
                                "a folder no running sweep writes to") from None  # fmt: skip
    return fd
