"""Leave-one-configuration-out accuracy of `calibrate steps` on the vLLM FPM runs.

For each model of ../shared/data/perf/fpm/ (index.csv names model, GPU and parallelism
of each file), fit an engine profile on all its configurations but one, predict the
held-out configuration's iterations, and report the median absolute error of the step
time for decode-only, prefill-only and mixed iterations, pooled over the held-out
predictions of that model. "before" is the plain roofline (identity profile) on the same
rows. Target (issue #13): <= 10 % per phase per model. Models the catalog lacks are
listed and skipped.

Then the DP-rank barrier check (`barrier_check`): how often rank 0's decode-only
iterations wait for another rank's prefill, against the chance that one runs.

With --across-models, also the profile fitted on one model applied to the other: what a
changed uncalibrated default would give.

Run: python benchmarks/calibration.py [FPM_DIR] [--across-models]  (prints Markdown tables;
asserts nothing)
"""

from __future__ import annotations

import csv
import itertools
import sys
import time
from pathlib import Path

import numpy as np

from pdd_plan.loaders.catalog import Catalog
from pdd_plan.loaders.step_measurements import catalog_model_id
from pdd_plan.model.compute import step_fit as sf
from pdd_plan.model.compute.engine_profile import IDENTITY, vllm_graph_max_tokens
from pdd_plan.stages.calibrating.calibration import prepared, read_measurements, with_graph_sizes

DEFAULT_DIR = Path(__file__).resolve().parents[2] / "shared" / "data" / "perf" / "fpm"


def files_by_model(folder: Path, catalog: Catalog) -> tuple[dict, list]:
    rows = list(csv.DictReader((folder / "index.csv").open()))
    found, missing = {}, []
    for r in rows:
        model = catalog_model_id(r["model"], catalog)
        if model is None:
            missing.append(r["model"])
            continue
        found.setdefault(model, []).append(folder / r["file"])
    return found, sorted(set(missing))


def graph_sizes(folder: Path) -> dict[str, int]:
    """Largest captured CUDA graph (tokens) of each file's engine: the launch's
    `--max-cudagraph-capture-size` (index.csv `extra_engine_args`), else vLLM's default
    min(2 x max_num_seqs, 512)."""
    rows = csv.DictReader((folder / "index.csv").open())
    return {
        r["file"]: vllm_graph_max_tokens(r["extra_engine_args"], int(r["max_num_seqs"]))
        for r in rows
    }


def read(files, catalog: Catalog) -> list:
    """The files' measurements, each with its engine's CUDA-graph capture size."""
    return with_graph_sizes(read_measurements(files, {}, catalog), graph_sizes(files[0].parent))


def loco(files, catalog: Catalog) -> dict:
    measured = read(files, catalog)
    data = prepared(measured, catalog)
    start = time.perf_counter()
    held = sf.held_out_s(data, data.group)
    seconds = time.perf_counter() - start
    per_config = []
    for i, m in enumerate(measured):
        one = data.group == i
        errs = sf.phase_errors(held[one], data.latency_s[one], data.phase[one])
        per_config.append((m.samples.label, errs))
    return {
        "after": sf.phase_errors(held, data.latency_s, data.phase),
        "before": sf.phase_errors(
            sf.predict_s(IDENTITY.vector(), data), data.latency_s, data.phase
        ),
        "rows": {p: int(np.sum(data.phase == p)) for p in sf.PHASES},
        "configs": len(measured),
        "fit_s": seconds / len(measured),
        "per_config": per_config,
    }


def across_models(by_model: dict, catalog: Catalog) -> None:
    """What a changed uncalibrated default would do (issue #13's second "Done when"): the
    profile fitted on one model's runs, applied to the other model's (leave one model out),
    against the plain roofline on the same rows."""
    data = {m: prepared(read(f, catalog), catalog) for m, f in by_model.items()}
    print("\n| fitted on | applied to | phase | plain roofline | fitted profile |")
    print("|---|---|---|---:|---:|")
    for train, test in itertools.permutations(data, 2):
        profile, _ = sf.fit_profile(data[train])
        d = data[test]
        after = sf.phase_errors(sf.predict_s(profile.vector(), d), d.latency_s, d.phase)
        before = sf.phase_errors(sf.predict_s(IDENTITY.vector(), d), d.latency_s, d.phase)
        for phase in after:
            print(f"| {train} | {test} | {phase} | {_pct(before[phase])} | {_pct(after[phase])} |")


def barrier_check(by_model: dict, catalog: Catalog) -> None:
    """Does rank 0 wait for the other DP ranks? With DP attention and EP, a decode-only
    iteration of rank 0 lasts as long as another rank's prefill whenever one runs: with q
    the share of rank 0's iterations that carry prefill, expect 1 - (1 - q)^(dp - 1) of its
    decode iterations to be slow, and slow ones as long as rank 0's own prefill-carrying
    ones; without DP ranks, none. The first 10 % of rows (cold start, sweep) are left out."""
    print(
        "\n| configuration | tp/ep/dp | decode iterations | slow (> 2x median) | "
        "expected 1-(1-q)^(dp-1) | slow ones, median | rank 0's prefill ones, median |"
    )
    print("|---|---|---:|---:|---:|---:|---:|")
    for files in by_model.values():
        for m in read(files, catalog):
            s = m.samples
            start = len(s.latency_s) // 10
            phase, latency_s = s.phases()[start:], s.latency_s[start:]
            decode = phase == "decode"
            slow = decode & (latency_s > 2 * np.median(latency_s[decode]))
            ranks = s.dp - 1 if s.ep > 1 else 0
            expected = 1 - (1 - np.mean(~decode)) ** ranks
            slow_ms = f"{1e3 * np.median(latency_s[slow]):.0f} ms" if slow.any() else "-"
            run = Path(m.file).name.split("_2026")[0]
            print(f"| {run} | {s.tp}/{s.ep}/{s.dp} | {decode.sum():,} | "
                  f"{100 * slow.sum() / decode.sum():.1f} % | {100 * expected:.1f} % | "
                  f"{slow_ms} | {1e3 * np.median(latency_s[~decode]):.0f} ms |")  # fmt: skip


def _pct(value) -> str:
    return "-" if value is None else f"{100 * value:.1f} %"


def main() -> None:
    args = [a for a in sys.argv[1:] if a != "--across-models"]
    folder = Path(args[0]) if args else DEFAULT_DIR
    catalog = Catalog()
    by_model, missing = files_by_model(folder, catalog)
    print("| model | configs | phase | rows | before (plain roofline) | after (LOCO) | <= 10 % |")
    print("|---|---:|---|---:|---:|---:|---|")
    details = []
    for model, files in by_model.items():
        r = loco(files, catalog)
        for phase in sf.PHASES:
            after = r["after"].get(phase)
            ok = "yes" if after is not None and after <= 0.10 else "no"
            print(
                f"| {model} | {r['configs']} | {phase} | {r['rows'][phase]:,} | "
                f"{_pct(r['before'].get(phase))} | {_pct(after)} | {ok} |"
            )
        details.append((model, r))
    for model, r in details:
        print(f"\n{model}: {r['fit_s']:.1f} s per fit; held-out error by configuration:")
        for label, errs in r["per_config"]:
            cells = ", ".join(f"{p} {_pct(errs.get(p))}" for p in sf.PHASES)
            print(f"- {label}: {cells}")
    for name in missing:
        print(f"\nskipped {name}: not in the model catalog (no published config.json here)")
    barrier_check(by_model, catalog)
    if "--across-models" in sys.argv:
        across_models(by_model, catalog)


if __name__ == "__main__":
    main()
