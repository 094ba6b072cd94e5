"""A load curve from a Prometheus range query (`workload.load_curve: {prometheus: PATH}`):
the JSON `/api/v1/query_range` returns, e.g. for

    sum(rate(vllm:request_success_total[1h]))   with step=1h

`{"status": "success", "data": {"resultType": "matrix", "result": [{"metric": {...},
"values": [[unix_ts, "value"], ...]}]}}`. Each value is a rate in requests per second
(`scale` converts another unit). Like `rate(x[STEP])`, the value at a timestamp describes
the step before it: point i is the period [ts_i - step, ts_i). One series is used: the only
one, or the one whose labels include `series` (and `__name__: metric`). Points must be one
step apart; NaN, infinities and negative values are refused with the point named.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from pdd_plan.errors import InputError
from pdd_plan.loaders.input_files import MIB, read_input_bytes, shown_path, utf8_text
from pdd_plan.loaders.load_curve import (
    CONTIGUOUS_TOL_S,
    MAX_PERIOD_S,
    MAX_PERIODS,
    MAX_RATE_PER_S,
    MIN_PERIOD_S,
)
from pdd_plan.loaders.strict import Node, Problems, describe
from pdd_plan.model.workload.load_curve import CurvePeriod, LoadCurve, iso_utc

WHAT = "a Prometheus query_range export (JSON)"
MAX_EXPORT_BYTES = 32 * MIB  # a week at one-minute steps of one series is about 0.4 MiB


def read_export(path: Path, wanted: dict[str, str]) -> LoadCurve:
    """The curve of the export's series whose labels include `wanted` (`selector`);
    InputError naming the file and the point."""
    name = shown_path(path)
    text = utf8_text(read_input_bytes(path, WHAT, MAX_EXPORT_BYTES), name, WHAT)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        where = f"line {exc.lineno}, column {exc.colno}"
        raise InputError.single(name, where, f"invalid JSON ({exc.msg})", WHAT) from None
    except RecursionError:
        raise InputError.single(name, "", "JSON nested too deep", WHAT) from None
    problems = Problems(name)
    points = _series_values(Node(data, "", problems), wanted)
    problems.raise_if_any()
    curve = _curve(points, problems, str(path))
    problems.raise_if_any()
    return curve


def selector(metric: Node, series: Node) -> dict[str, str] | None:
    """Labels the series must carry (scenario keys: their problems are the scenario's;
    None when they have one)."""
    wanted, before = {}, len(metric.problems.items)
    if not series.is_missing:
        for key, child in (series.mapping(patterns=(r".*",)) or {}).items():
            value = child.string(required=True, expected="a label value (text)")
            if value is not None:
                wanted[key] = value
    name = metric.string(expected="a metric name (the series' __name__ label)")
    if name is not None:
        wanted["__name__"] = name
    return wanted if len(metric.problems.items) == before else None


def _series_values(root: Node, wanted: dict[str, str]) -> Node | None:
    f = root.mapping(required=("status",), optional=("data", "error"), patterns=(r".*",))
    if f is None:
        return None
    if f["status"].value != "success":
        said = f["error"].value if isinstance(f["error"].value, str) else ""
        f["status"].fail("success (the query's export, not its error)", said[:200])
        return None
    if f["data"].is_missing:
        f["data"].fail("this key (a successful answer has its data)")
        return None
    d = f["data"].mapping(required=("resultType", "result"), patterns=(r".*",))
    if d is None:
        return None
    if d["resultType"].value != "matrix":
        d["resultType"].fail("matrix (a range query: /api/v1/query_range)")
        return None
    results = d["result"].items(min_items=1) or []
    chosen = [r for r in results if _labels_match(r, wanted)]
    if len(chosen) != 1:
        _refuse_selection(d["result"], results, chosen, wanted)
        return None
    g = chosen[0].mapping(required=("values",), patterns=(r".*",))
    return None if g is None else g["values"]


def _labels(result: Node) -> dict:
    value = result.value if isinstance(result.value, dict) else {}
    labels = value.get("metric")
    return labels if isinstance(labels, dict) else {}


def _labels_match(result: Node, wanted: dict[str, str]) -> bool:
    labels = _labels(result)
    return all(labels.get(k) == v for k, v in wanted.items())


def _refuse_selection(where: Node, results, chosen, wanted) -> None:
    said = ", ".join(f"{k}={v}" for k, v in wanted.items()) or "no labels"
    if chosen:
        where.fail(
            f"one series matching {said} (found {len(chosen)}): name its labels with "
            "load_curve.series, e.g. series: {job: api}"
        )
        return
    seen = "; ".join(
        "{" + ", ".join(f"{k}={v}" for k, v in _labels(r).items()) + "}" for r in results[:5]
    )
    where.fail(f"a series matching {said} (the export holds {seen or 'none'})")


def _curve(values: Node, problems: Problems, source: str) -> LoadCurve | None:
    items = values.items(min_items=2)
    if items is None:
        return None
    if len(items) > MAX_PERIODS:
        values.fail(f"at most {MAX_PERIODS:,} points (one period each)")
        return None
    points = [_point(item) for item in items]
    if None in points:
        return None
    step = points[1][0] - points[0][0]
    if not MIN_PERIOD_S <= step <= MAX_PERIOD_S:
        problems.add(
            items[1].path,
            f"a step of {step:g} s from the point before",
            f"a step of {MIN_PERIOD_S:g} s to {MAX_PERIOD_S:g} s (one period each)",
        )
        return None
    for i in range(2, len(points)):
        gap = points[i][0] - points[i - 1][0]
        if abs(gap - step) > CONTIGUOUS_TOL_S:
            problems.add(
                items[i].path,
                f"the point at {_when(points[i][0])}, {gap:g} s after the one before",
                f"a point one step ({step:g} s) after the one before (a gap in the series, "
                "or another step)",
            )
            return None
    origin = points[0][0] - step
    periods = tuple(CurvePeriod(ts - step - origin, step, rate) for ts, rate in points)
    return LoadCurve(periods, origin, source)


def _when(ts: float) -> str:
    """A point's time as the export gives it and as a reader knows it."""
    try:
        iso = iso_utc(ts)
    except (OverflowError, OSError, ValueError):
        return f"{ts:.15g}"
    return f"{ts:.15g} ({iso})"


def _point(item: Node) -> tuple[float, float] | None:
    """(unix seconds, rate) of one `[ts, "value"]`; None with the problem recorded."""
    pair = item.value
    expected = 'a [unix_time, "value"] pair'
    if not isinstance(pair, list) or len(pair) != 2:
        item.fail(expected)
        return None
    ts, raw = pair
    if isinstance(ts, bool) or not isinstance(ts, int | float) or not math.isfinite(ts):
        item.problems.add(item.path, f"the time {describe(ts)}", expected)
        return None
    try:
        rate = float(raw) if isinstance(raw, str) else math.nan
    except ValueError:
        rate = math.nan
    if not isinstance(raw, str) or not math.isfinite(rate) or not 0 <= rate <= MAX_RATE_PER_S:
        item.problems.add(
            item.path,
            f"the value {describe(raw)} at {_when(ts)}",
            f'a rate >= 0 and <= {MAX_RATE_PER_S:g} req/s, quoted ("12.5")',
        )
        return None
    return float(ts), rate
