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
import io
import json
import math
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from pdd_plan.errors import InputError
from pdd_plan.loaders.input_files import open_input, os_error, shown_path
from pdd_plan.loaders.strict import describe
from pdd_plan.model.units import MS_S

FORMATS = ("mooncake", "azure")
MAX_TRACE_TOKENS = 100_000_000  # a prompt or an output longer than this is a broken row
# A line longer than this is a broken row (a request of 100 M tokens in 512-token blocks
# is ~2 MB of hash ids; real rows are a few KB); it is refused without being held whole.
MAX_LINE_CHARS = 4 * 1024 * 1024
# Arrival times above this (31,700 years) are broken rows; they would also overflow the
# variance of the gaps (1e308 squared) and make the burstiness NaN.
MAX_TRACE_TIME_S = 1e12
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
    return InputError.single(shown_path(path), where, found, expected)


def _head(path: Path, what: str) -> bytes:
    """The first 4 KiB of a regular, non-empty, text file (checked before any parsing)."""
    with open_input(path, what) as handle:
        try:
            head = handle.read(4096)
        except OSError as exc:
            raise os_error(path, exc, what) from None
    if not head.strip():
        raise InputError.single(shown_path(path), "", "an empty file", what)
    if b"\x00" in head:
        raise InputError.single(
            shown_path(path), "", "binary data (NUL bytes)", f"{what} (UTF-8 text)"
        )
    return head


def detect_format(path: Path | str) -> str:
    """`mooncake` or `azure`, from the extension, else from the first non-blank character."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix in (".jsonl", ".json", ".ndjson"):
        return "mooncake"
    if suffix == ".csv":
        return "azure"
    head = _head(path, "a request trace").lstrip()
    if head.startswith(b"{"):
        return "mooncake"
    if head.split(b"\n", 1)[0].lstrip(b"\xef\xbb\xbf").startswith(b"TIMESTAMP"):
        return "azure"
    raise InputError.single(
        shown_path(path),
        "line 1",
        describe(head[:40].decode("utf-8", "replace")),
        "a Mooncake JSONL line ({...}) or an Azure CSV header (TIMESTAMP,...); "
        "or name the format with --format-in",
    )


def _lines(path: Path, what: str) -> Iterator[tuple[int, str]]:
    """(line number, text) of every line; a line is read only up to MAX_LINE_CHARS, so an
    over-long one is refused without holding it; bad encoding is one clear error."""
    _head(path, what)
    lineno = 0
    with io.TextIOWrapper(open_input(path, what), encoding="utf-8-sig", newline="") as handle:
        while True:
            try:  # +2: a line of exactly the cap still fits with its \r\n
                text = handle.readline(MAX_LINE_CHARS + 2)
            except UnicodeDecodeError:
                raise _fail(
                    path, lineno + 1, "", "bytes that are not UTF-8", f"{what} (UTF-8 text)"
                ) from None
            except OSError as exc:
                raise os_error(path, exc, what) from None
            if not text:
                return
            lineno += 1
            if len(text.rstrip("\r\n")) > MAX_LINE_CHARS:
                raise _fail(
                    path,
                    lineno,
                    "",
                    f"a line of more than {MAX_LINE_CHARS:,} characters",
                    f"{what} (one request per line)",
                )
            yield lineno, text


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
    except RecursionError:  # e.g. hash_ids nested 100,000 lists deep
        raise _fail(
            path, line, "", "JSON nested too deeply", "one flat JSON object per line"
        ) from None
    except ValueError as exc:  # an integer of more than 4,300 digits
        reason = str(exc).split(":")[0]
        raise _fail(
            path, line, "", f"a JSON value Python refuses ({reason})", "a trace row"
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
        or not 0 <= stamp <= MAX_TRACE_TIME_S / MS_S  # NaN and infinities fail too
    ):
        limit = f"{MAX_TRACE_TIME_S / MS_S:.0e}"
        raise _fail(path, line, "timestamp", describe(stamp), f"milliseconds from 0 to {limit}")
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
    expected = f"a time like 2023-11-16 18:17:03.97 or seconds from 0 to {MAX_TRACE_TIME_S:.0e}"
    try:
        value = float(text)
    except ValueError:
        value = None
    if value is not None:
        if not 0 <= value <= MAX_TRACE_TIME_S:  # NaN and infinities fail too
            raise _fail(path, line, "TIMESTAMP", describe(text), expected)
        return value
    whole, _, fraction = text.strip().partition(".")
    try:
        stamp = datetime.fromisoformat(whole).replace(tzinfo=UTC).timestamp()
        stamp += float(f"0.{fraction}") if fraction else 0.0
    except (ValueError, OverflowError):
        raise _fail(path, line, "TIMESTAMP", describe(text), expected) from None
    if not 0 <= stamp <= MAX_TRACE_TIME_S:  # a date before 1970 is negative seconds
        raise _fail(path, line, "TIMESTAMP", describe(text), expected)
    return stamp


def _token_count(path: Path, line: int, field: str, text: str, minimum: int) -> int:
    try:
        value = float(text)
    except ValueError:
        value = text
    if isinstance(value, float) and not math.isfinite(value):
        value = text
    return _integer(path, line, field, value, minimum)


def _csv_rows(path: Path, reader) -> Iterator[list[str]]:
    """The reader's rows; a row csv cannot read (a field over its 131,072-character limit,
    a NUL byte) is one error naming the line."""
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            found = f"a row CSV cannot read ({exc})"
            raise _fail(path, reader.line_num, "", found, "an Azure CSV row") from None
        yield row


def read_azure(path: Path | str) -> Iterator[TraceRequest]:
    path = Path(path)
    reader = csv.reader(text for _, text in _lines(path, _WHAT["azure"]))
    header = next(_csv_rows(path, reader), None) or []
    columns = {name.strip(): i for i, name in enumerate(header)}
    missing = [c for c in AZURE_COLUMNS if c not in columns]
    if missing:
        found = describe(",".join(header))
        raise _fail(path, 1, "", f"header {found}", f"the columns {', '.join(AZURE_COLUMNS)}")
    stamp_i, in_i, out_i = (columns[c] for c in AZURE_COLUMNS)
    for row in _csv_rows(path, reader):
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
