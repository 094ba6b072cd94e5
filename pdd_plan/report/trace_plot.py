"""Hit rate against LRU capacity as an SVG or PNG (matplotlib, imported only when drawing)."""

from __future__ import annotations

import io

from pdd_plan.loaders.trace_analyze import TraceAnalysis

# The same trace gives the same bytes: matplotlib draws clip-path and glyph ids at random
# unless salted, and stamps an SVG with the date and both formats with its version
# (report/plots.py does the same for the sweep's and the report's figures).
SVG_HASH_SALT = "pdd-plan"
FIXED_METADATA = {"svg": {"Date": None, "Creator": None}, "png": {"Software": None}}


def hit_vs_capacity_figure(analysis: TraceAnalysis, suffix: str) -> bytes:
    """The figure's bytes in the format named by `suffix` (`.svg` or `.png`)."""
    import matplotlib

    matplotlib.use("Agg")  # no display, no GUI toolkit
    import matplotlib.pyplot as plt

    inputs = analysis.input_tokens
    finite = sorted(
        (r for r in analysis.by_capacity if r.capacity_blocks is not None),
        key=lambda r: r.capacity_blocks,
    )
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    if finite:
        x = [max(r.capacity_tokens, 1) for r in finite]
        ax.plot(x, [r.token_hit_frac(inputs) for r in finite], "o-", label="token-weighted")
        ax.plot(x, [float(r.hit_frac.mean()) for r in finite], "s--", label="mean per request")
        ax.set_xscale("log")
    if analysis.unlimited is not None:  # computed only when asked for
        ceiling = analysis.unlimited.token_hit_frac(inputs)
        ax.axhline(ceiling, color="grey", linestyle=":", label=f"unlimited cache ({ceiling:.3f})")
    ax.set_xlabel("prefix-cache capacity (tokens)")
    ax.set_ylabel("prefix hit rate")
    ax.set_ylim(0, 1)
    ax.set_title(f"LRU prefix hit rate: {analysis.path.rsplit('/', 1)[-1]}", fontsize=10)
    ax.grid(True, alpha=0.3)
    ax.legend(loc="lower right", fontsize=8)
    buffer = io.BytesIO()
    fmt = suffix.lstrip(".")
    with plt.rc_context({"svg.hashsalt": SVG_HASH_SALT}):  # ids from the content, not random
        fig.savefig(buffer, format=fmt, bbox_inches="tight", metadata=FIXED_METADATA[fmt])
    plt.close(fig)
    return buffer.getvalue()
