"""Wall time of a 200-point sweep of the default scenario, in one process and in two.

The grid: workload.arrival_rate_per_s = 2, 4, ..., 20 (10 values) x the mean prefix-hit
rate 0.5, 0.525, ..., 0.975 (20 values), each point solved for max_bcr (pdd) with the
progress bar of `pdd-plan sweep`. Prints the wall time with --jobs 1 and --jobs 2, the
speed-up, the failed points, and whether both runs gave the same rows.

Run: python benchmarks/sweep.py [--rates 2:20:2] [--hits 0.5:0.975:0.025] [--jobs 1,2]
(prints figures; asserts nothing). On a shared machine, note what else was running.
Rates stop at 20 req/s: above about 25 req/s at a 0.5 mean hit rate the default's 512
GPUs a datacenter no longer suffice, and each such point spends ~30 s (the MILP time
limit) proving it infeasible, which would time the solver's limit rather than the sweep.
"""

from __future__ import annotations

import argparse
import os

from pdd_plan.cli.sweep_cmd import run_with_progress
from pdd_plan.stages.sweeping import sweep as sw


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rates", default="2:20:2")
    parser.add_argument("--hits", default="0.5:0.975:0.025")
    parser.add_argument("--jobs", default="1,2")
    args = parser.parse_args()
    spec = sw.prepare(
        None,
        [f"workload.arrival_rate_per_s={args.rates}", f"workload.prefix_hit_rate.mean={args.hits}"],
    )
    print(f"{len(spec.points)} points of the default scenario; {os.cpu_count()} CPUs; "
          f"load average {os.getloadavg()[0]:.2f} at the start")  # fmt: skip
    walls, runs = {}, {}
    for jobs in (int(j) for j in args.jobs.split(",")):
        rows, wall = run_with_progress(spec, jobs)
        walls[jobs], runs[jobs] = wall, rows
        failed = [r for r in rows if r["status"] not in ("optimal", "feasible")]
        kinds = sorted({r["status"] for r in failed})
        print(f"--jobs {jobs}: {wall:.1f} s ({wall / len(rows):.2f} s a point); "
              f"{len(failed)} failed {kinds}; load average {os.getloadavg()[0]:.2f}")  # fmt: skip
    if 1 in walls and len(walls) > 1:
        for jobs, wall in walls.items():
            if jobs != 1:
                print(f"speed-up with --jobs {jobs}: {walls[1] / wall:.2f}x")

        def strip(rows):
            return [{k: v for k, v in r.items() if k != "wall_s"} for r in rows]

        same = all(strip(rows) == strip(runs[1]) for rows in runs.values())
        print(f"same rows in every run: {same}")


if __name__ == "__main__":  # the pool's fork server imports this module again
    main()
