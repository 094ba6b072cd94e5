"""`trace analyze`'s tables: the trace's figures, hit rate against capacity, prompt length by
hit rate, and MD's LRU curve."""

from __future__ import annotations

from pdd_plan.cli.output import console, safe, table

NOT_COMPUTED = (
    "not computed: it holds every distinct block in memory (add unlimited to --cache-capacity)"
)


def print_result(result: dict) -> None:
    console.print(
        f"{safe(result['file'])} ({result['format']}): {result['requests']:,} requests "
        f"over {result['span_s']:,.0f} s"
    )
    rows = [
        ["arrival rate (req/s)", result["arrival_rate_per_s"]],
        ["burstiness c² of inter-arrivals", result["burstiness_cv2"]],
        ["  without the longest 0.1 % of gaps", result["burstiness_cv2_trimmed"]],
    ]
    for key, name in (("input_tokens", "input tokens"), ("output_tokens", "output tokens")):
        s = result[key]
        rows.append(
            [
                f"{name} mean / P50 / P90 / P99 / max",
                " / ".join(f"{s[k]:,.0f}" for k in ("mean", "p50", "p90", "p99", "max")),
            ]
        )
    cache = result["prefix_cache"]
    if cache is None:
        rows.append(["prefix hit rate", "unknown (no prefix hashes in this trace)"])
    else:
        for side in ("prefill", "decode", "unlimited"):
            c = cache[side]
            if c is None:
                rows.append([f"{side} cache", NOT_COMPUTED])
                continue
            cap = (
                "unlimited" if c["capacity_tokens"] is None else f"{c['capacity_tokens']:,} tokens"
            )
            rows.append(
                [
                    f"{side} cache ({cap}): token hit / mean request hit",
                    f"{c['token_hit_frac']:.3f} / {c['mean_request_hit_frac']:.3f}",
                ]
            )
    table("Trace", ["quantity", "value"], rows)
    if cache is not None and len(cache["by_capacity"]) > 1:
        listed = {c["capacity_blocks"] for c in cache["by_capacity"]}
        extra = [] if None in listed or cache["unlimited"] is None else [cache["unlimited"]]
        table(
            f"Prefix hit rate against LRU capacity ({cache['block_tokens']}-token blocks)",
            [
                "capacity (tokens)",
                "blocks",
                "token hit",
                "mean request hit",
                "P50",
                "P90",
                "zero-hit share",
            ],
            [
                [
                    "unlimited" if c["capacity_tokens"] is None else f"{c['capacity_tokens']:,}",
                    "-" if c["capacity_blocks"] is None else f"{c['capacity_blocks']:,}",
                    c["token_hit_frac"],
                    c["mean_request_hit_frac"],
                    c["p50_hit_frac"],
                    c["p90_hit_frac"],
                    c["zero_hit_share"],
                ]
                for c in sorted(
                    cache["by_capacity"] + extra,
                    key=lambda c: (
                        float("inf") if c["capacity_blocks"] is None else c["capacity_blocks"]
                    ),
                )
            ],
        )
    _print_joint(result)
    for note in result["notes"]:
        console.print(f"note: {note}", highlight=False)


def _print_joint(result: dict) -> None:
    """Mean prompt length per hit-rate band, and MD's LRU curve."""
    corr = result["hit_rate_vs_input"]
    if corr is not None:
        rho = corr["spearman_hit_vs_input"]
        table(
            "Prompt length by prefix hit rate (Spearman rho "
            f"{'undefined' if rho is None else f'{rho:.3f}'})",
            ["hit rate", "share of requests", "mean input tokens"],
            [
                [
                    f"{r['hit_low']:g}-{r['hit_high']:g}",
                    r["share"],
                    f"{r['mean_input_tokens']:,.0f}",
                ]
                for r in corr["by_hit_rate"]
            ],
        )
    curve = result["decode_reuse_curve"]
    if curve is not None:
        table(
            "Decode-side LRU curve (workload.prefix_reuse)",
            ["capacity (tokens)", "resident share of P-side hits"],
            [
                [f"{c:,}", f]
                for c, f in zip(curve["capacity_tokens"], curve["resident_frac"], strict=True)
            ],
        )
