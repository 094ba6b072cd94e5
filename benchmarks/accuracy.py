"""The versioned accuracy table: the model, uncalibrated, against the measured data in
../shared, written to benchmarks/results/accuracy.md and accuracy.csv with the tool's
version and commit.

1. Published serving points (benchmarks/accuracy_points.csv, typed from
   ../shared/data/hardware-reference.md sections 4.B and 4.C with their sources): each
   replayed as `pdd-plan validate` replays a run
(pdd_plan/stages/calibrating/validation.py), error = model /
   measured - 1 per figure.
2. Step times of a running vLLM engine (../shared/data/perf/fpm): every iteration's time
   predicted by the plain roofline, median |error| and median signed error per
   configuration and phase (decode-only, prefill-only, mixed).

Nothing is fitted here: the figures say how far the plain roofline is from each
measurement (with a profile from `calibrate`, see benchmarks/calibration.py).

Run: python benchmarks/accuracy.py [SHARED_DIR]  (default ../shared next to the repo)
"""

from __future__ import annotations

import csv
import io
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from pdd_plan import __version__
from pdd_plan.loaders.catalog import Catalog
from pdd_plan.loaders.serving_results import ServingRun
from pdd_plan.loaders.step_measurements import Config
from pdd_plan.stages.calibrating.validation import FIGURES, check_run

HERE = Path(__file__).resolve().parent
POINTS = HERE / "accuracy_points.csv"
RESULTS = HERE / "results"
DEFAULT_SHARED = HERE.parents[1] / "shared"
SOURCES = {
    "nim": "NVIDIA NIM 1.8.0 benchmark, Llama-3.3-70B-Instruct FP8 on 2x H100 80GB, TP2, "
    "5000 in / 500 out, concurrency 1-100: https://docs.nvidia.com/nim/benchmarking/llm/"
    "1.0.0/performance.md (../shared/data/hardware-reference.md 4.C). Its ITL is "
    "genai-perf's per-request inter-token latency: compared as the mean TPOT.",
    "trtllm": "NVIDIA/TensorRT-LLM docs/source/performance/perf-overview.md @ 00f37686aa85"
    "4010d68bcbd0f4ab000221541ca6, max-throughput runs (infinite request rate), total "
    "output tokens/s (../shared/data/hardware-reference.md 4.B).",
}
ASSUMPTIONS = (
    "NIM runs: 10 x concurrency requests, at least 100 (the source does not say; "
    "`estimate`'s default).",
    "TensorRT-LLM runs: 1,000 requests sent at once (the source does not say how many).",
    "The engine replayed is vLLM's scheduler: 8,192 tokens per iteration, at most 256 "
    "running (TensorRT-LLM's max-throughput runs may batch more: the model's throughput "
    "is then low).",
    "KV cache dtype: not stated by either source; each point is replayed with a bf16 and "
    "an FP8 KV cache (FP8 holds twice the requests: it moves the saturated points).",
)


def commit() -> str:
    def git(*args):
        return subprocess.run(["git", *args], cwd=HERE, capture_output=True, text=True).stdout

    head = git("rev-parse", "--short", "HEAD").strip() or "unknown"
    return head + ("+changes" if git("status", "--porcelain", "--", "pdd_plan").strip() else "")


def _ms(row: dict, key: str) -> list[tuple[str, float]]:
    return [(key.removesuffix("_ms"), float(row[key]) / 1e3)] if row[key] else []


def serving_checks(catalog: Catalog) -> tuple[list, list[str]]:
    """(source, row, RunCheck) per published point; the points whose model the catalog
    lacks, by name."""
    checks, skipped = [], []
    for number, row in enumerate(csv.DictReader(POINTS.open()), 2):
        if row["model"] not in catalog.model_ids():
            skipped.append(f"{row['source']} {row['model']}")
            continue
        isl, osl, requests = int(row["input_tokens"]), int(row["output_tokens"]), None
        concurrency = int(row["concurrency"]) if row["concurrency"] else None
        requests = int(row["requests"]) if row["requests"] else max(10 * concurrency, 100)
        concurrency = concurrency or requests  # an infinite rate: every request at once
        measured = _ms(row, "ttft_mean_ms") + _ms(row, "tpot_mean_ms")
        reported = [
            ("output_throughput_tokens_per_s", float(row["output_throughput_tokens_per_s"]))
        ]
        options = {"weight_dtype": row["weight_dtype"]}
        for kv_dtype in row["kv_dtype"].split("|"):  # the sources do not say: each one
            config = Config(row["model"], row["gpu"], int(row["tp"]), kv_dtype=kv_dtype)
            run = ServingRun(f"line {number}", config, isl, osl, requests, concurrency, None,
                             tuple(measured), tuple(reported))  # fmt: skip
            check = check_run(run, POINTS.name, "csv", catalog, options)
            checks.append((f"{row['source']}, KV {kv_dtype}", row, check))
    return checks, skipped


def fpm_errors(folder: Path, catalog: Catalog) -> tuple[list[dict], list[str]]:
    """Per configuration and phase: rows, median |error| and median signed error of the
    plain roofline's step time; the models the catalog lacks."""
    sys.path.insert(0, str(HERE))
    from calibration import files_by_model, read  # benchmarks/calibration.py

    from pdd_plan.model.compute import step_fit as sf
    from pdd_plan.model.compute.engine_profile import IDENTITY
    from pdd_plan.stages.calibrating.calibration import prepared

    out = []
    by_model, missing = files_by_model(folder, catalog)
    for model, files in by_model.items():
        measured = read(files, catalog)
        data = prepared(measured, catalog)
        error = sf.predict_s(IDENTITY.vector(), data) / data.latency_s - 1.0
        for i, m in enumerate(measured):
            for phase in sf.PHASES:
                rows = (data.group == i) & (data.phase == phase)
                if rows.any():
                    s, run = m.samples, Path(m.file).name.split("_2026")[0]
                    out.append({"model": model, "config": f"{run} TP{s.tp} EP{s.ep} DP{s.dp}",
                                "phase": phase, "rows": int(rows.sum()),
                                "mdape": float(np.median(np.abs(error[rows]))),
                                "median_signed": float(np.median(error[rows]))})  # fmt: skip
    return out, missing


def _pct(value: float) -> str:
    return f"{100 * value:+.1f} %"


def _label(figure: str) -> str:
    if figure.startswith("output_throughput"):
        return "output tok/s"
    metric, stat = figure.split("_")
    return f"{metric.upper()} {stat}"


def markdown(checks, skipped, fpm, stamp: dict) -> str:
    lines = [
        "# Accuracy of the plain roofline on measured data",
        "",
        f"pdd-plan {stamp['version']}, commit {stamp['commit']}, {stamp['date']}; "
        "written by `python benchmarks/accuracy.py` (do not edit by hand). "
        "Error = model / measured - 1 (+: the model predicts more time, or more "
        "throughput). No engine profile: the plain roofline.",
        "",
        "## Published serving points",
        "",
        "| source | model | GPU | TP | ISL/OSL | load | figure | measured | model | error |",
        "|---|---|---|---:|---|---|---|---:|---:|---:|",
    ]
    for source, row, c in checks:
        load = (
            f"concurrency {c.run.concurrency}"
            if row["concurrency"]
            else f"{c.run.requests} at once"
        )
        for f in c.figures:
            scale, unit = (1.0, "") if "throughput" in f.name else (1e3, " ms")
            lines.append(
                f"| {source} | {row['model']} | {row['gpu']} | {row['tp']} | "
                f"{row['input_tokens']}/{row['output_tokens']} | {load} | {_label(f.name)} | "
                f"{f.measured * scale:,.2f}{unit} | {f.model * scale:,.2f}{unit} | "
                f"{_pct(f.error_frac)} |"
            )
    lines += ["", "Median over the points:", "", "| source | figure | points | median error | "
              "median abs error |", "|---|---|---:|---:|---:|"]  # fmt: skip
    for source in dict.fromkeys(s for s, _, _ in checks):
        for name in FIGURES:
            errs = [f.error_frac for s, _, c in checks if s == source for f in c.figures
                    if f.name == name]  # fmt: skip
            if errs:
                lines.append(f"| {source} | {_label(name)} | {len(errs)} | "
                             f"{_pct(float(np.median(errs)))} | "
                             f"{100 * float(np.median(np.abs(errs))):.1f} % |")  # fmt: skip
    lines += ["", "Sources:", ""] + [f"- {k}: {v}" for k, v in SOURCES.items()]
    lines += ["", "Assumptions (the sources do not state them):", ""]
    lines += [f"- {a}" for a in ASSUMPTIONS]
    if skipped:
        counts = {name: skipped.count(name) for name in skipped}
        named = "; ".join(f"{k} ({n} points)" if n > 1 else k for k, n in counts.items())
        lines += ["", f"Not in the model catalog, skipped: {named}."]
    lines += ["", "## Step times of a running vLLM engine (../shared/data/perf/fpm, B300)", "",
              "| model | configuration | phase | iterations | median abs error | "
              "median error |", "|---|---|---|---:|---:|---:|"]  # fmt: skip
    for r in fpm:
        lines.append(f"| {r['model']} | {r['config']} | {r['phase']} | {r['rows']:,} | "
                     f"{100 * r['mdape']:.1f} % | {_pct(r['median_signed'])} |")  # fmt: skip
    if not fpm:
        lines.append("| (../shared/data/perf/fpm not found) | | | | | |")
    return "\n".join(lines) + "\n"


def csv_text(checks, fpm, stamp: dict) -> str:
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(["version", "commit", "table", "source", "model", "gpu", "tp", "isl", "osl",
                "load", "figure", "count", "measured", "model_value", "error_frac"])  # fmt: skip
    head = [stamp["version"], stamp["commit"]]
    for source, row, c in checks:
        load = row["concurrency"] or "all at once"
        for f in c.figures:
            figures = [f"{f.measured:.6g}", f"{f.model:.6g}", f"{f.error_frac:.4f}"]
            w.writerow(head + ["serving", source, row["model"], row["gpu"], row["tp"],
                               row["input_tokens"], row["output_tokens"], load, f.name, 1,
                               *figures])  # fmt: skip
    for r in fpm:
        w.writerow(head + ["fpm", "perf/fpm", r["model"], "b300", r["config"], "", "", "",
                           f"step_{r['phase']}_abs", r["rows"], "", "",
                           f"{r['mdape']:.4f}"])  # fmt: skip
        w.writerow(head + ["fpm", "perf/fpm", r["model"], "b300", r["config"], "", "", "",
                           f"step_{r['phase']}_signed", r["rows"], "", "",
                           f"{r['median_signed']:.4f}"])  # fmt: skip
    return out.getvalue()


def main() -> None:
    shared = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_SHARED
    catalog = Catalog()
    stamp = {"version": __version__, "commit": commit(),
             "date": datetime.now(UTC).strftime("%Y-%m-%d")}  # fmt: skip
    checks, skipped = serving_checks(catalog)
    folder = shared / "data" / "perf" / "fpm"
    fpm, missing = fpm_errors(folder, catalog) if (folder / "index.csv").exists() else ([], [])
    skipped += [f"perf/fpm {name}" for name in missing]
    RESULTS.mkdir(exist_ok=True)
    for name, text in (("accuracy.md", markdown(checks, skipped, fpm, stamp)),
                       ("accuracy.csv", csv_text(checks, fpm, stamp))):  # fmt: skip
        tmp = RESULTS / f".{name}.tmp"
        tmp.write_text(text)
        tmp.replace(RESULTS / name)  # whole or not at all
    print((RESULTS / "accuracy.md").read_text())


if __name__ == "__main__":
    main()
