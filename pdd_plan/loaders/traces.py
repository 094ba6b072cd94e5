"""Request traces -> a stream of requests, read line by line (never the whole file at once).

Two formats:
- Mooncake JSON Lines: `timestamp` (ms since the trace start), `input_length`,
  `output_length`, `hash_ids` (prefix-block hashes, one per block of the prompt).
- Azure LLM inference CSV: `TIMESTAMP` (wall clock, e.g. `2023-11-16 18:17:03.9799600`,
  or plain seconds), `ContextTokens`, `GeneratedTokens`. No prefix information.

Every bad row is one InputError naming the file, the line, the field, the value found and
the value expected.
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from pdd_plan.errors import InputError
from pdd_plan.loaders.strict import describe
from pdd_plan.units import MS_S

FORMATS = ("mooncake", "azure")
MAX_TRACE_TOKENS = 100_000_000  # a prompt or an output longer than this is a broken row
AZURE_COLUMNS = ("TIMESTAMP", "ContextTokens", "GeneratedTokens")
_WHAT = {"mooncake": "a Mooncake JSONL trace", "azure": "an Azure LLM inference CSV trace"}


@dataclass(frozen=True, slots=True)
class TraceRequest:
    arrival_s: float
    input_tokens: int
    output_tokens: int
    hash_ids: list | None  # None: the trace carries no prefix hashes


def _fail(path: Path, line: int, field: str, found: str, expected: str) -> InputError:
    where = f"line {line}" + (f", {field}" if field else "")
    return InputError.single(str(path), where, found, expected)


def _check_file(path: Path, what: str) -> None:
    if not path.exists():
        raise InputError.single(str(path), "", "no such file", what)
    if path.is_dir():
        raise InputError.single(str(path), "", "a directory", what)
    with path.open("rb") as handle:
        head = handle.read(4096)
    if not head.strip():
        raise InputError.single(str(path), "", "an empty file", what)
    if b"\x00" in head:
        raise InputError.single(str(path), "", "binary data (NUL bytes)", f"{what} (UTF-8 text)")


def detect_format(path: Path | str) -> str:
    """`mooncake` or `azure`, from the extension, else from the first non-blank character."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix in (".jsonl", ".json", ".ndjson"):
        return "mooncake"
    if suffix == ".csv":
        return "azure"
    _check_file(path, "a request trace")
    with path.open("rb") as handle:
        head = handle.read(4096).lstrip()
    if head.startswith(b"{"):
        return "mooncake"
    if head.split(b"\n", 1)[0].lstrip(b"\xef\xbb\xbf").startswith(b"TIMESTAMP"):
        return "azure"
    raise InputError.single(
        str(path),
        "line 1",
        describe(head[:40].decode("utf-8", "replace")),
        "a Mooncake JSONL line ({...}) or an Azure CSV header (TIMESTAMP,...); "
        "or name the format with --format-in",
    )


def _lines(path: Path, what: str) -> Iterator[tuple[int, str]]:
    """(line number, text) of the non-blank lines; bad encoding is one clear error."""
    _check_file(path, what)
    lineno = 0
    try:
        with path.open("r", encoding="utf-8-sig", newline="") as handle:
            for lineno, text in enumerate(handle, start=1):
                yield lineno, text
    except UnicodeDecodeError:
        raise _fail(
            path, lineno + 1, "", "bytes that are not UTF-8", f"{what} (UTF-8 text)"
        ) from None
    except OSError as exc:
        raise InputError.single(
            str(path), "", f"an unreadable file ({exc.strerror})", what
        ) from None


def _integer(path, line, field, value, minimum: int) -> int:
    ok = isinstance(value, int) and not isinstance(value, bool)
    if isinstance(value, float) and value.is_integer():
        ok, value = True, int(value)
    if not ok or not minimum <= value <= MAX_TRACE_TOKENS:
        raise _fail(
            path, line, field, describe(value), f"an integer from {minimum} to {MAX_TRACE_TOKENS:,}"
        )
    return value


def _mooncake_row(path: Path, line: int, text: str) -> TraceRequest:
    try:
        row = json.loads(text)
    except json.JSONDecodeError as exc:
        raise _fail(
            path, line, "", f"invalid JSON ({exc.msg})", "one JSON object per line"
        ) from None
    if not isinstance(row, dict):
        raise _fail(path, line, "", describe(row), "one JSON object per line")
    for field in ("timestamp", "input_length", "output_length", "hash_ids"):
        if field not in row:
            raise _fail(path, line, field, "nothing", f"the `{field}` field")
    stamp = row["timestamp"]
    if (
        isinstance(stamp, bool)
        or not isinstance(stamp, int | float)
        or not math.isfinite(stamp)
        or stamp < 0
    ):
        raise _fail(path, line, "timestamp", describe(stamp), "milliseconds >= 0")
    hashes = row["hash_ids"]
    if not isinstance(hashes, list) or not all(
        isinstance(h, int | str) and not isinstance(h, bool) for h in hashes
    ):
        raise _fail(path, line, "hash_ids", describe(hashes), "a list of block ids (integers)")
    return TraceRequest(
        stamp * MS_S,
        _integer(path, line, "input_length", row["input_length"], 1),
        _integer(path, line, "output_length", row["output_length"], 0),
        hashes,
    )


def read_mooncake(path: Path | str) -> Iterator[TraceRequest]:
    path = Path(path)
    for line, text in _lines(path, _WHAT["mooncake"]):
        if text.strip():
            yield _mooncake_row(path, line, text)


def _azure_time_s(path: Path, line: int, text: str) -> float:
    """Wall-clock `YYYY-MM-DD HH:MM:SS.fffffff` (any number of fraction digits) or seconds."""
    try:
        value = float(text)
        if math.isfinite(value) and value >= 0:
            return value
    except ValueError:
        pass
    whole, _, fraction = text.strip().partition(".")
    try:
        stamp = datetime.fromisoformat(whole).replace(tzinfo=UTC).timestamp()
        return stamp + (float(f"0.{fraction}") if fraction else 0.0)
    except ValueError:
        raise _fail(
            path, line, "TIMESTAMP", describe(text), "a time like 2023-11-16 18:17:03.97 or seconds"
        ) from None


def _token_count(path: Path, line: int, field: str, text: str, minimum: int) -> int:
    try:
        value = float(text)
    except ValueError:
        value = text
    if isinstance(value, float) and not math.isfinite(value):
        value = text
    return _integer(path, line, field, value, minimum)


def read_azure(path: Path | str) -> Iterator[TraceRequest]:
    path = Path(path)
    reader = csv.reader(text for _, text in _lines(path, _WHAT["azure"]))
    header = next(reader, None) or []
    columns = {name.strip(): i for i, name in enumerate(header)}
    missing = [c for c in AZURE_COLUMNS if c not in columns]
    if missing:
        found = describe(",".join(header))
        raise _fail(path, 1, "", f"header {found}", f"the columns {', '.join(AZURE_COLUMNS)}")
    stamp_i, in_i, out_i = (columns[c] for c in AZURE_COLUMNS)
    for row in reader:
        line = reader.line_num  # csv counts the lines it has read, quoted newlines included
        if not "".join(row).strip():
            continue
        if len(row) < len(header):
            raise _fail(path, line, "", f"{len(row)} fields", f"{len(header)} fields")
        yield TraceRequest(
            _azure_time_s(path, line, row[stamp_i]),
            _token_count(path, line, "ContextTokens", row[in_i], 1),
            _token_count(path, line, "GeneratedTokens", row[out_i], 0),
            None,
        )


def read_trace(path: Path | str, format_in: str = "auto") -> tuple[str, Iterator[TraceRequest]]:
    """The format used and the requests, in file order."""
    if format_in not in ("auto", *FORMATS):
        raise InputError.single(
            "command line", "--format-in", repr(format_in), f"auto or one of {', '.join(FORMATS)}"
        )
    fmt = detect_format(path) if format_in == "auto" else format_in
    reader = read_mooncake if fmt == "mooncake" else read_azure
    return fmt, reader(path)
