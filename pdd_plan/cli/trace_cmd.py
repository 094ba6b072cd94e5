"""`pdd-plan trace analyze FILE`: prefix hit rates, arrivals and lengths of a request trace,
as a summary and as a scenario `workload:` block."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import typer

from pdd_plan.cli.bounds import MAX_BLOCK_TOKENS, MAX_CACHE_TOKENS, bounded, check_range
from pdd_plan.cli.output import FORMAT_HELP, Format, print_structured
from pdd_plan.cli.output_formats import YAML_ONLY
from pdd_plan.cli.output_paths import check_outputs
from pdd_plan.cli.trace_print import NOT_COMPUTED, print_result
from pdd_plan.errors import InputError
from pdd_plan.report.files import standard_stream, write_atomic

app = typer.Typer(help="Analyse request traces (Mooncake JSONL, Azure CSV).", no_args_is_help=True)

_SUFFIX = {"k": 10**3, "m": 10**6, "g": 10**9}
_CAPACITY = re.compile(r"(\d+(?:\.\d+)?)([kmg]?)")


def parse_capacity(text: str, option: str) -> int | None:
    """`1000000`, `64k`, `2M`, or `unlimited`/`inf` (None)."""
    word = text.strip().lower()
    if word in ("unlimited", "inf", "none"):
        return None
    match = _CAPACITY.fullmatch(word)
    if match is None:
        raise InputError.single(
            "command line",
            option,
            repr(text),
            "a capacity like 1000000, 64k, 2M or unlimited (comma-separated for several)",
        )
    capacity = float(match.group(1)) * _SUFFIX.get(match.group(2), 1)
    check_range(option, capacity, 0, MAX_CACHE_TOKENS, found=repr(text))  # inf: never int()
    return int(capacity)


def _to_blocks(capacity: int | None, unit: str, block_tokens: int) -> int | None:
    return capacity if capacity is None or unit == "blocks" else capacity // block_tokens


PLOT_FILE = "a file name ending .svg or .png"
# `-` is stdout for the text outputs, but not for the plot: its format comes from the file's
# name, and an image would land in the middle of the summary printed there
PLOT_NOT_STDOUT = (
    " (a plot is never written to standard output: its format comes from the name, and the "
    "summary is printed there)"
)


def _check_options(unit: str, dist: str, block_tokens: int, plot: str | None, scenario_out, base):
    checks = [
        ("--cache-unit", unit, ("tokens", "blocks")),
        ("--dist", dist, ("bins", "empirical")),
    ]
    for option, value, allowed in checks:
        if value not in allowed:
            raise InputError.single("command line", option, repr(value), " or ".join(allowed))
    if block_tokens < 1:
        raise InputError.single(
            "command line", "--block-tokens", str(block_tokens), "an integer >= 1"
        )
    if plot is not None and standard_stream(plot) is not None:
        found = f"{plot!r}, standard output"
        raise InputError.single("command line", "--plot", found, PLOT_FILE + PLOT_NOT_STDOUT)
    if plot is not None and Path(plot).suffix.lower() not in (".svg", ".png"):
        raise InputError.single("command line", "--plot", repr(plot), PLOT_FILE)
    if base and not scenario_out:
        raise InputError.single("command line", "--base", repr(base), "--base with --scenario-out")


def _notes(analysis, workload: dict) -> list[str]:
    from pdd_plan.loaders import trace_stats as stats

    notes = []
    if not analysis.has_hashes:
        notes.append(
            "this trace has no prefix hashes: the prefix hit rate is unknown and the workload "
            "block has no prefix_hit_rate (add one, or use --scenario-out to keep the base's)"
        )
    else:
        notes += _correlation_notes(analysis, workload)
    for key, values in (
        ("input_tokens", analysis.input_tokens),
        ("output_tokens", analysis.output_tokens),
    ):
        dist = workload.get(key)  # none when joint: each hit-rate bin has its own
        if dist is not None and dist["kind"] == "bins":
            bins = [stats.Bin(b["low"], b["high"], b["share"]) for b in dist["bins"]]
            notes.append(
                f"{key}: trace mean {values.mean():,.0f}, bins mean {stats.bins_mean(bins):,.0f} "
                "(uniform inside each bin)"
            )
    if analysis.has_hashes and analysis.unlimited is None:
        notes.append(f"the unlimited-cache ceiling is {NOT_COMPUTED}")
    a = analysis.arrivals
    if a.cv2 > 2 * a.cv2_trimmed and a.cv2 > 2:
        notes.append(
            f"burstiness c² {a.cv2:.3g} comes mostly from a few long idle gaps (without the "
            f"longest 0.1 %: {a.cv2_trimmed:.3g}); the workload block keeps {a.cv2:.3g}, "
            "check it is the burstiness you plan for"
        )
    if analysis.out_of_order:
        notes.append(
            f"{analysis.out_of_order} requests arrive before the one above them; "
            "replayed in file order"
        )
    return notes


# |Spearman rho| from which the hit rate and prompt length are called correlated: the
# conventional "weak" boundary of a rank correlation (Cohen's 0.1/0.3/0.5 scale lies around it)
MATERIAL_RANK_CORRELATION = 0.2


def _correlation_notes(analysis, workload: dict) -> list[str]:
    from pdd_plan.loaders import trace_stats as stats
    from pdd_plan.loaders.trace_workload import joint_cached_token_frac

    tok = analysis.prefill.token_hit_frac(analysis.input_tokens)
    rho = stats.spearman(analysis.prefill.hit_frac, analysis.input_tokens)
    said = "undefined" if rho is None else f"{rho:.3f}"
    if "input_tokens" not in workload:  # joint bins written
        joint = joint_cached_token_frac(workload["prefix_hit_rate"])
        return [
            f"hit rate and prompt length written joint (Spearman rho {said}): the scenario's "
            f"cached share of prompt tokens is {joint:.3f}; the trace's is {tok:.3f}"
        ]
    req = float(analysis.prefill.hit_frac.mean())
    notes = [
        f"a scenario takes hit rate and prompt length as independent, so its cached share "
        f"of prompt tokens is the mean per-request hit {req:.3f}; the trace's is {tok:.3f}"
    ]
    if rho is not None and abs(rho) >= MATERIAL_RANK_CORRELATION:
        notes.append(
            f"hit rate and prompt length are correlated (Spearman rho {rho:.3f}): --joint "
            "writes each hit-rate bin with its own input lengths"
        )
    return notes


def _result(analysis, workload: dict, notes: list[str]) -> dict:
    from pdd_plan.loaders import trace_stats as stats

    inputs = analysis.input_tokens
    a = analysis.arrivals
    cache, correlation = None, None
    if analysis.has_hashes:
        hit = analysis.prefill.hit_frac
        correlation = {
            "spearman_hit_vs_input": stats.spearman(hit, inputs),
            "by_hit_rate": stats.input_by_hit_band(hit, inputs),
        }
        cache = {
            "block_tokens": analysis.block_tokens,
            "prefill": analysis.prefill.describe(inputs),
            "decode": analysis.decode.describe(inputs),
            "unlimited": analysis.unlimited and analysis.unlimited.describe(inputs),
            "by_capacity": [r.describe(inputs) for r in analysis.by_capacity],
        }
    return {
        "file": analysis.path,
        "format": analysis.format,
        "requests": a.requests,
        "span_s": a.span_s,
        "arrival_rate_per_s": a.rate_per_s,
        "burstiness_cv2": a.cv2,
        "burstiness_cv2_trimmed": a.cv2_trimmed,
        "input_tokens": stats.summary(inputs),
        "output_tokens": stats.summary(analysis.output_tokens),
        "prefix_cache": cache,
        "hit_rate_vs_input": correlation,
        "decode_reuse_curve": analysis.reuse and analysis.reuse.block(),
        "workload": workload,
        "notes": notes,
    }


@app.command("analyze")
def analyze(
    file: str = typer.Argument(..., help="a Mooncake JSONL or Azure CSV trace"),
    format_in: str = typer.Option("auto", "--format-in", help="auto, mooncake or azure"),
    block_tokens: int = bounded(
        512, "--block-tokens", low=1, high=MAX_BLOCK_TOKENS, help="tokens per hash_ids block"
    ),
    cache_capacity: str = typer.Option(
        "unlimited",
        "--cache-capacity",
        help="prefill LRU capacity; a comma list sweeps it (the first feeds the workload)",
    ),
    cache_unit: str = typer.Option("tokens", "--cache-unit", help="tokens or blocks"),
    decode_cache_capacity: str = typer.Option(
        None,
        "--decode-cache-capacity",
        help="decode-side LRU capacity (default: the first --cache-capacity)",
    ),
    dist: str = typer.Option("bins", "--dist", help="bins (quantile edges) or empirical"),
    joint: bool = typer.Option(
        False,
        "--joint",
        help="write the hit rate's bins each with its own input lengths (hit rate joint with "
        "prompt length); a note suggests it when |Spearman rho| >= 0.2",
    ),
    reuse_curve: bool = typer.Option(
        False,
        "--reuse-curve/--no-reuse-curve",
        help="MD's LRU curve into workload.prefix_reuse (a second pass over the trace and an "
        "unlimited cache in memory, so off unless asked: memory then grows with the trace's "
        "distinct blocks, not with --cache-capacity)",
    ),
    workload_out: str = typer.Option(
        None, "--workload-out", help="write the workload: block as YAML (.yaml)"
    ),
    scenario_out: str = typer.Option(
        None,
        "--scenario-out",
        help="write a whole scenario (.yaml): --base with this workload",
    ),
    base: str = typer.Option(
        None, "--base", help="base scenario for --scenario-out (default: default)"
    ),
    plot: str = typer.Option(None, "--plot", help="hit rate against capacity, .svg or .png"),
    load_curve_out: str = typer.Option(
        None,
        "--load-curve",
        help="write the arrival rate (and, with prefix hashes, the hit mix) per period as a "
        "load curve file (.yaml) for workload.load_curve: {file: ...}",
    ),
    period_min: float = bounded(
        60.0, "--period-min", low=1, high=1440, help="the load curve's period in minutes"
    ),
    format: Format = typer.Option(Format.table, "--format", help=FORMAT_HELP),
) -> None:
    """Prefix hit rate (LRU replay), arrival rate, burstiness and lengths of a trace."""
    from pdd_plan.loaders.trace_analyze import analyze as run_analysis
    from pdd_plan.loaders.trace_workload import (
        check_reads_back,
        scenario_with_workload,
        scenario_yaml,
        workload_block,
        workload_yaml,
    )

    _check_options(cache_unit, dist, block_tokens, plot, scenario_out, base)
    outs = {"--workload-out": workload_out, "--scenario-out": scenario_out, "--plot": plot,
            "--load-curve": load_curve_out}  # fmt: skip
    yaml_outs = ("--workload-out", "--scenario-out", "--load-curve")
    check_outputs([file, base], outs, formats=dict.fromkeys(yaml_outs, YAML_ONLY))
    capacities = tuple(
        _to_blocks(parse_capacity(c, "--cache-capacity"), cache_unit, block_tokens)
        for c in cache_capacity.split(",")
    )
    decode_raw = None  # given: it also goes to the scenario's policy
    decode_blocks = capacities[0]  # not given: as large as the prefill-side cache
    if decode_cache_capacity is not None:
        decode_raw = parse_capacity(decode_cache_capacity, "--decode-cache-capacity")
        decode_blocks = _to_blocks(decode_raw, cache_unit, block_tokens)
    analysis = run_analysis(
        file,
        format_in=format_in,
        block_tokens=block_tokens,
        capacities_blocks=capacities,
        decode_capacity_blocks=decode_blocks,
        reuse_curve=reuse_curve,
    )
    if plot and not analysis.has_hashes:
        raise InputError.single(
            file, "", "a trace without prefix hashes", "hash_ids to plot hit rate (--plot)"
        )
    block = workload_block(analysis, dist, joint)
    notes = _notes(analysis, block)
    outputs = {}  # everything computed before the first file is written
    if workload_out:
        outputs[workload_out] = workload_yaml(analysis, block)
    if scenario_out:
        decode_tokens = None
        if decode_blocks is not None and decode_cache_capacity is not None:
            decode_tokens = decode_raw * (block_tokens if cache_unit == "blocks" else 1)
        scenario, kept = scenario_with_workload(
            base or "default", block, Path(file).stem, decode_tokens
        )
        notes += kept
        outputs[scenario_out] = scenario_yaml(scenario)
    if outputs:  # the block in the scenario written, else in the default scenario
        checked_base = (base or "default") if scenario_out else "default"
        whole = outputs.get(scenario_out) or scenario_yaml(
            scenario_with_workload("default", block, Path(file).stem)[0]
        )
        named = " and ".join(
            f"{o} {p}" for o, p in outs.items() if p and o not in ("--plot", "--load-curve")
        )
        check_reads_back(file, checked_base, named, whole)
    if load_curve_out:
        outputs[load_curve_out] = _load_curve_text(analysis, period_min, file)
    figure = None
    if plot:
        from pdd_plan.report.trace_plot import hit_vs_capacity_figure

        figure = hit_vs_capacity_figure(analysis, Path(plot).suffix.lower())
    for path, text in outputs.items():
        write_atomic(path, text)
    if figure is not None:
        write_atomic(Path(plot), figure)
    result = _result(analysis, block, notes)
    if format.structured:
        from pdd_plan.model.metrics import json_safe

        print_structured(json_safe(result), format)  # no NaN: an undefined figure is null
    else:
        print_result(result)


def _load_curve_text(analysis, period_min: float, trace: str) -> str:
    """The load curve file, checked to read back as the scenario loader reads it."""
    import tempfile

    from pdd_plan.loaders.load_curve_files import read_curve_file
    from pdd_plan.loaders.trace_curve import curve_periods, curve_yaml

    periods, left_out = curve_periods(analysis, period_min * 60.0)
    text = curve_yaml(analysis, periods, left_out)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "curve.yaml"
        path.write_text(text, encoding="utf-8")
        try:
            read_curve_file(path)
        except InputError as exc:  # what it writes, it must read back
            raise InputError([dataclasses.replace(p, file=trace) for p in exc.problems]) from None
    return text
