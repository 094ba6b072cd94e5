"""The architecture verdict across the decode KV layout (kv_verdict.py's dict) as table
rows and sentences, for `explain` and the sizing report alike."""

from __future__ import annotations

from pdd_plan.report.md_format import ARCH_NAMES, num


def _name(arch: str | None) -> str:
    return ARCH_NAMES.get(arch, arch) if arch else "no plan"


def headers(verdict: dict) -> list[str]:
    archs = list(verdict["cases"][0]["architectures"])
    return ["tokens uncompressed", "KV a request",
            *(f"{_name(a)} BCR / req/s" for a in archs), "best"]  # fmt: skip


def rows(verdict: dict) -> list[list[str]]:
    out = []
    for case in verdict["cases"]:
        cells = [_figures(f) for f in case["architectures"].values()]
        gb = f"{case['per_request_bytes'] / 1e9:.3g} GB"
        out.append([case["case"], gb, *cells, _name(case["best"])])
    return out


def _figures(f: dict) -> str:
    if f["bcr_rps_per_usd_hour"] is None:
        return f["status"]
    return f"{num(f['bcr_rps_per_usd_hour'], 3)} / {num(f['goodput_rps'])}"


def _between(change: dict) -> str:
    return f"{change['from_case']} and {change['to_case']} tokens uncompressed"


def sentences(verdict: dict) -> list[str]:
    """The best architecture at each end of the range and where it changes; then each
    pair's BCR ratio at the ends and where their order changes."""
    cases = verdict["cases"]
    first, last = cases[0], cases[-1]
    ends = (f"Best with {first['case']} tokens uncompressed: {_name(first['best'])}; "
            f"with {last['case']}: {_name(last['best'])}")  # fmt: skip
    flips = "; ".join(
        f"{_name(f['from'])} -> {_name(f['to'])} between {_between(f)}" for f in verdict["flips"]
    )
    out = [f"{ends}; " + (f"the best changes: {flips}." if flips else "it holds across the range.")]
    for p in verdict["pairs"]:
        a, b = (_name(x) for x in p["pair"])
        ratio = " -> ".join(num(r, 3) for r in p["bcr_ratio"])
        where = "; ".join(f"between {_between(c)}" for c in p["crossings"])
        order = f"their order changes {where}" if where else "their order holds"
        out.append(f"{a} / {b} BCR across the range: {ratio} ({order}).")
    return out
