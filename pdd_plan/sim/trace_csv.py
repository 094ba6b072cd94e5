"""The per-request trace of a run as CSV: the time of every stage, in seconds from the
start of the run, units in the headers; empty cells for stages a request skips.

Written in chunks of rows to a text handle, so a run of millions of requests never holds
its trace as one string (or as Python objects per cell) in memory.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TextIO

import numpy as np

from pdd_plan.model import routing as rt
from pdd_plan.sim.run import SimRun

PATH_NAMES = {rt.DIRECT: "direct", rt.RELAY: "relay", rt.LOCAL: "local"}
CHUNK_ROWS = 65_536
# a non-finite float prints as nan, inf or -inf, and no other cell starts with those
_INFINITE = re.compile(r"(?<=,)-?inf(?=[,\n])")


@dataclass(frozen=True)
class Column:
    name: str
    values: Callable[[slice], np.ndarray | list]  # the cells of the rows in a slice
    form: str  # %-format of one cell


def _instance(index: np.ndarray) -> Callable[[slice], list]:
    """An instance index, empty where the request never ran there (-1)."""
    return lambda s: ["" if i < 0 else str(i) for i in index[s].tolist()]


def _where(mask: np.ndarray, values) -> Callable[[slice], np.ndarray]:
    return lambda s: np.where(mask[s], values[s], np.nan)


def columns(run: SimRun) -> list[Column]:
    tr = run.trace
    req, wan = tr.requests, tr.wan
    crossing = tr.wan_payload_bytes > 0
    nan = lambda s: np.full(len(req.arrival_s[s]), np.nan)  # noqa: E731
    names = np.array([PATH_NAMES[k] for k in sorted(PATH_NAMES)])
    order = np.searchsorted(sorted(PATH_NAMES), tr.path)
    f, i, t = "%.6f", "%d", "%s"
    return [
        Column("request", lambda s: np.arange(s.start, s.stop), i),
        Column("path", lambda s: names[order[s]].tolist(), t),
        Column("input_tokens", lambda s: req.input_tokens[s].astype(np.int64), i),
        Column("cached_tokens", lambda s: req.cached_tokens[s].astype(np.int64), i),
        Column("output_tokens", lambda s: req.output_tokens[s].astype(np.int64), i),
        Column("hit_rate", lambda s: req.hit_rate[s], f),
        Column("arrival_s", lambda s: req.arrival_s[s], f),
        Column("prefill_instance", lambda s: tr.prefill.instance[s], i),
        Column("prefill_start_s", lambda s: tr.prefill.start_s[s], f),
        Column("prefill_end_s", lambda s: tr.prefill.end_s[s], f),
        Column("rdma_done_s", lambda s: tr.rdma_done_s[s], f),
        Column("wan_payload_bytes", lambda s: tr.wan_payload_bytes[s].astype(np.int64), i),
        Column("wan_connection_s", _where(crossing, wan.connect_s) if wan else nan, f),
        Column("wan_sent_s", _where(crossing, wan.sent_s) if wan else nan, f),
        Column("wan_done_s", _where(crossing, wan.done_s) if wan else nan, f),
        Column("local_instance", _instance(tr.local_instance), t),
        Column("local_tokens", lambda s: tr.local_tokens[s], i),
        Column("local_first_token_s", lambda s: tr.local_first_s[s], f),
        Column("local_last_token_s", lambda s: tr.local_last_s[s], f),
        Column("main_instance", _instance(tr.main_instance), t),
        Column("main_tokens", lambda s: tr.main_tokens[s], i),
        Column("main_first_token_s", lambda s: tr.main_first_s[s], f),
        Column("main_last_token_s", lambda s: tr.main_last_s[s], f),
        Column("first_token_s", lambda s: _first_token_s(tr, s), f),
        Column("done_s", lambda s: _done_s(tr, s), f),
        Column("ttft_s", lambda s: _first_token_s(tr, s) - req.arrival_s[s], f),
    ]


def _first_token_s(tr, s: slice) -> np.ndarray:
    # Trace.first_token_s for a slice of the rows (the property builds every row)
    return np.where(tr.local_tokens[s] > 0, tr.local_first_s[s], tr.main_first_s[s])


def _done_s(tr, s: slice) -> np.ndarray:
    local = np.where(tr.local_tokens[s] > 0, tr.local_last_s[s], np.nan)
    return np.fmax(local, np.where(tr.main_tokens[s] > 0, tr.main_last_s[s], np.nan))


def _as_list(cells) -> list:
    return cells.tolist() if isinstance(cells, np.ndarray) else cells


def write_trace_csv(run: SimRun, out: TextIO, chunk_rows: int = CHUNK_ROWS) -> None:
    """Write the trace to `out`, `chunk_rows` rows at a time. Every text cell is a path
    name (direct, relay, local), so none can read as a spreadsheet formula."""
    cols = columns(run)
    out.write(",".join(c.name for c in cols) + "\n")
    row_form = ",".join(c.form for c in cols) + "\n"
    n = len(run.trace.requests)
    for start in range(0, n, chunk_rows):
        s = slice(start, min(start + chunk_rows, n))
        cells = [_as_list(c.values(s)) for c in cols]
        text = "".join([row_form % row for row in zip(*cells, strict=True)])
        out.write(_blank_non_finite(text))


def _blank_non_finite(text: str) -> str:
    text = text.replace(",nan", ",")
    return _INFINITE.sub("", text) if "inf" in text else text


def trace_csv(run: SimRun) -> str:
    """The whole trace as one string (small runs and tests)."""
    import io

    out = io.StringIO()
    write_trace_csv(run, out)
    return out.getvalue()
