"""The per-request trace of a run as CSV text: the time of every stage, in seconds from
the start of the run, units in the headers; empty cells for stages a request skips."""

from __future__ import annotations

import csv
import io
import math

import numpy as np

from pdd_plan.model import routing as rt
from pdd_plan.sim.run import SimRun

PATH_NAMES = {rt.DIRECT: "direct", rt.RELAY: "relay", rt.LOCAL: "local"}


def _cell(value) -> str:
    """Numbers as plain decimals; text that a spreadsheet could read as a formula is
    quoted with a leading apostrophe."""
    if isinstance(value, float | np.floating):
        return "" if not math.isfinite(value) else f"{value:.6f}"
    if isinstance(value, int | np.integer):
        return str(value)
    text = str(value)
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


def trace_csv(run: SimRun) -> str:
    tr = run.trace
    req = tr.requests
    wan = tr.wan
    nan = np.full(len(req), np.nan)
    crossing = tr.wan_payload_bytes > 0
    columns = {
        "request": np.arange(len(req)),
        "path": [PATH_NAMES[int(p)] for p in tr.path],
        "input_tokens": req.input_tokens.astype(int),
        "cached_tokens": req.cached_tokens.astype(int),
        "output_tokens": req.output_tokens.astype(int),
        "hit_rate": req.hit_rate,
        "arrival_s": req.arrival_s,
        "prefill_instance": tr.prefill.instance,
        "prefill_start_s": tr.prefill.start_s,
        "prefill_end_s": tr.prefill.end_s,
        "rdma_done_s": tr.rdma_done_s,
        "wan_payload_bytes": tr.wan_payload_bytes.astype(np.int64),
        "wan_connection_s": np.where(crossing, wan.connect_s, np.nan) if wan else nan,
        "wan_sent_s": np.where(crossing, wan.sent_s, np.nan) if wan else nan,
        "wan_done_s": np.where(crossing, wan.done_s, np.nan) if wan else nan,
        "local_instance": np.where(tr.local_instance >= 0, tr.local_instance, np.nan),
        "local_tokens": tr.local_tokens,
        "local_first_token_s": tr.local_first_s,
        "local_last_token_s": tr.local_last_s,
        "main_instance": np.where(tr.main_instance >= 0, tr.main_instance, np.nan),
        "main_tokens": tr.main_tokens,
        "main_first_token_s": tr.main_first_s,
        "main_last_token_s": tr.main_last_s,
        "first_token_s": tr.first_token_s,
        "done_s": tr.done_s,
        "ttft_s": tr.first_token_s - req.arrival_s,
    }
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(columns)
    rows = zip(*(c.tolist() if isinstance(c, np.ndarray) else c for c in columns.values()),
               strict=True)  # fmt: skip
    for row in rows:
        writer.writerow([_cell(v) for v in row])
    return out.getvalue()
