"""Wall time of one evaluate at about 2,000 request classes and of a goodput bisection.

Targets (issue #3): one evaluate under 50 ms, a goodput bisection under 1 s.
Run: python benchmarks/evaluate.py  (prints figures; asserts nothing)
"""

from __future__ import annotations

import statistics
import time

from pdd_plan.loaders.catalog import Catalog
from pdd_plan.loaders.plan_file import load_plan
from pdd_plan.loaders.scenario import load_scenario, resolve_scenario_path, scenarios_dir
from pdd_plan.model.evaluate import goodput_rps, prepare, snapshot

REPEATS = 7
RESOLUTION = (1, 40, 50)  # the paper's prompts are fixed at 64K: 40 x 50 = 2,000 classes


def median_s(fn, repeats: int = REPEATS) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    catalog = Catalog()
    scenario = load_scenario(resolve_scenario_path("pdd-paper"), catalog)
    model = catalog.model_for(scenario)
    print(
        f"{'plan':8} {'classes':>7} {'prepare ms':>10} {'evaluate ms':>11} {'goodput s':>9}"
        f" {'goodput req/s':>13}"
    )
    for arch in ("pdd", "cdc_pd", "idc_pd"):
        plan = load_plan(scenarios_dir() / "plans" / f"pdd-paper-{arch}.yaml", scenario, catalog)
        prep = median_s(
            lambda p=plan: prepare(scenario, p, model, catalog.gpus, catalog.lines, RESOLUTION)
        )
        setup = prepare(scenario, plan, model, catalog.gpus, catalog.lines, RESOLUTION)
        one = median_s(lambda s=setup: snapshot(s, scenario.workload.arrival_rate_per_s))
        bisect = median_s(lambda s=setup: goodput_rps(s), repeats=3)
        print(
            f"{arch:8} {len(setup.classes):7d} {prep * 1e3:10.1f} {one * 1e3:11.1f} "
            f"{bisect:9.2f} {goodput_rps(setup):13.1f}"
        )


if __name__ == "__main__":
    main()
