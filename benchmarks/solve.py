"""Wall time of `pdd-plan solve`: the default scenario as a fresh process, and solves with
4, 8, 16 and 32 candidate GPU types across 3 datacenters.

Targets (issue #4): the default under 2 s including start-up; 32 types under 20 s.
Issue #15 (idle 2-core machine): default `solve` <= 0.8 s wall including start-up,
`--help` <= 0.3 s, `evaluate` of the default's plan <= 0.4 s.
Run: python benchmarks/solve.py [--repeats 5] [--default-only] [--report] [--stages]
[--types 17,51 [--shapes 16] [--time-limit 30]] (prints figures; asserts nothing). --types
solves only those N-type scenarios, in process, with wall and CPU (issue #15: 17 types x 16
shapes proven optimal in <= 3 s, 51 x 16 in <= 10 s within the time limit). --stages adds
the CPU of each stage of the default solve and of the evaluate of its plan in one fresh
process: the imports by family, each after the ones above it, then the work (the solve's
architectures in turn). The default's four architectures are solved side by side in forked processes
(pdd_plan/stages/fork_pool.py, one a CPU): the figures show the same solve with them one after
another (`jobs=1`, through the API in a fresh process), and with --report
`pdd-plan report default` once (issue #15: <= 8 s; its CPU figure counts its workers too:
they are forked children of its process since report_pool.py, where the fork server's were
not). Each process figure is the median wall time and the median CPU time (user +
system, children included) of its runs; on a shared machine the CPU time is the steadier
figure, and the load average printed first says how shared it was.

The N-type scenarios are the default scenario (model, workload, SLA, objective, WAN) with
its datacenters replaced by three: dc_a hosts prefill and relay decode, dc_b and dc_c host
main decode. Type k (k = 0 .. N-1) is catalog GPU k mod 17 (catalog order) offered in
datacenter k mod 3 at its catalog rental price x DC_PRICE_FACTOR of that datacenter. With
32 types GPUs 0-14 are offered twice; since 17 mod 3 != 0 the second offer is in another
datacenter, so every type is a distinct (GPU, datacenter, price). Each offer may have up
to 512 GPUs, in the planner's instance shapes.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pdd_plan.loaders.catalog import Catalog
from pdd_plan.loaders.scenario import load_scenario, resolve_scenario_path
from pdd_plan.model.scenario import Datacenter, GpuOffer, Scenario
from pdd_plan.plan.solve import solve

TYPE_COUNTS = (4, 8, 16, 32)
# issue #15's large catalogs: every catalog GPU once (17), and in every datacenter (51)
LARGE_TYPE_COUNTS = (17, 51)
DATACENTERS = (
    ("dc_a", ("prefill", "relay_decode")),
    ("dc_b", ("main_decode",)),
    ("dc_c", ("main_decode",)),
)
DC_PRICE_FACTOR = {"dc_a": 1.00, "dc_b": 0.90, "dc_c": 0.80}
MAX_GPUS = 512
# --shapes N offers each type in the first N of these instance sizes (GPUs) instead of the
# planner's default 1, 2, 4 GPUs and 1-4 nodes (7 on an 8-GPU node): issue #15 measured its
# large catalogs at 8 and 16 shapes.
SHAPE_LADDER = (1, 2, 4, 8, 16, 24, 32, 40, 48, 56, 64, 72, 80, 96, 112, 128)


def median_s(fn, repeats: int) -> tuple[float, object]:
    times, out = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), out


def with_types(base: Scenario, catalog: Catalog, n: int, shapes: int = 0) -> Scenario:
    """The default scenario with n GPU types spread over three datacenters (module doc), each
    in the first `shapes` sizes of SHAPE_LADDER (0: the planner's default shapes)."""
    ids = list(catalog.gpus)
    offers: dict[str, list[GpuOffer]] = {dc: [] for dc, _ in DATACENTERS}
    for k in range(n):
        gpu = catalog.gpus[ids[k % len(ids)]]
        dc = DATACENTERS[k % len(DATACENTERS)][0]
        price = round(gpu.rental_usd_per_gpu_hour * DC_PRICE_FACTOR[dc], 4)
        offers[dc].append(GpuOffer(gpu.id, price, MAX_GPUS, SHAPE_LADDER[:shapes]))
    dcs = tuple(Datacenter(dc, roles, tuple(offers[dc])) for dc, roles in DATACENTERS)
    return dataclasses.replace(base, name=f"{n}-types", datacenters=dcs)


def _command() -> list[str]:
    exe = Path(sys.executable).with_name("pdd-plan")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "pdd_plan"]


def _children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def cli_s(args: list[str], repeats: int) -> tuple[float, float]:
    """(median wall s, median CPU s) of `pdd-plan ARGS` as a fresh process."""
    walls, cpus = [], []
    for _ in range(repeats):
        cpu, start = _children_cpu_s(), time.perf_counter()
        subprocess.run([*_command(), *args], check=True, stdout=subprocess.DEVNULL)
        walls.append(time.perf_counter() - start)
        cpus.append(_children_cpu_s() - cpu)
    return statistics.median(walls), statistics.median(cpus)


def python_s(code: str, repeats: int) -> tuple[float, float]:
    """(median wall s, median CPU s) of `python -c CODE` as a fresh process."""
    walls, cpus = [], []
    for _ in range(repeats):
        cpu, start = _children_cpu_s(), time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True, stdout=subprocess.DEVNULL)
        walls.append(time.perf_counter() - start)
        cpus.append(_children_cpu_s() - cpu)
    return statistics.median(walls), statistics.median(cpus)


API_SOLVE = "from pdd_plan import api; api.solve_scenario(None, jobs={jobs})"

# CPU by stage in a fresh interpreter: the imports by family (each after the ones above it),
# then the work, `solve` (each architecture in turn) or `evaluate PLAN`
STAGES = """
import json, sys, time
marks = [("start", time.process_time())]
def mark(label):
    marks.append((label, time.process_time()))
import typer, typer.rich_utils; mark("import typer and its rich help")
import typer._adapters; mark("import pydantic (typer's argument values)")
import numpy; mark("import numpy")
import scipy.special; mark("import scipy.special")
import scipy.optimize; mark("import scipy.optimize")
from pdd_plan import api; mark("import pdd_plan (catalog, models)")
from pdd_plan.loaders.catalog import Catalog
from pdd_plan.loaders.scenario import load_scenario, resolve_scenario_path
if sys.argv[1] == "solve":
    import pdd_plan.plan.solve; mark("import the optimiser (PuLP, plan/)")
    catalog = Catalog(); s = load_scenario(resolve_scenario_path(None), catalog)
    mark("load the catalog and the scenario")
    for arch in s.architectures:
        api.ArchSolve(s, catalog, api.DEFAULT_RESOLUTION, 30.0)(arch); mark("solve " + arch)
else:
    from pdd_plan.loaders.plan_file import load_plan
    from pdd_plan.model.evaluate import evaluate, prepare
    catalog = Catalog(); s = load_scenario(resolve_scenario_path(None), catalog)
    plan = load_plan(sys.argv[2], s, catalog); mark("load the catalog, scenario and plan")
    setup = prepare(s, plan, catalog.model_for(s), catalog.gpus, catalog.lines,
                    api.DEFAULT_RESOLUTION); mark("prepare")
    evaluate(setup); mark("evaluate (its goodput search)")
print("STAGES=" + json.dumps(marks))
"""


def print_stages(args: list[str], repeats: int) -> None:
    """The median CPU of each stage of STAGES over `repeats` fresh processes."""
    runs = []
    for _ in range(repeats):
        done = subprocess.run([sys.executable, "-c", STAGES, *args], check=True,
                              capture_output=True, text=True)  # fmt: skip
        line = [x for x in done.stdout.splitlines() if x.startswith("STAGES=")][-1]
        marks = json.loads(line[len("STAGES=") :])
        runs.append([(b[0], b[1] - a[1]) for a, b in zip(marks, marks[1:], strict=False)])
    print(f"CPU by stage, one process, `{args[0]}` (median of {repeats}):")
    for i, (label, _) in enumerate(runs[0]):
        print(f"  {label:44} {statistics.median(r[i][1] for r in runs):6.3f} s")
    total = statistics.median(sum(x for _, x in r) for r in runs)
    print(f"  {'total':44} {total:6.3f} s")


def default_plan_file(folder: Path) -> Path:
    """The default scenario's plan, as `pdd-plan solve` gives it, in a plan file."""
    done = subprocess.run(
        [*_command(), "solve", "--format", "json"], check=True, capture_output=True, text=True
    )
    plan = folder / "plan.yaml"
    plan.write_text(json.dumps({"plan": json.loads(done.stdout)["plan"]}))  # JSON is YAML
    return plan


def print_processes(repeats: int, report: bool = False, stages: bool = False) -> None:
    """The start-up-inclusive figures of issue #15: solve, --help and evaluate."""
    print(f"load average (1, 5, 15 min) at start: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"{'process (median of ' + str(repeats) + ')':34} {'wall s':>8} {'CPU s':>8}")
    with tempfile.TemporaryDirectory() as tmp:
        plan = default_plan_file(Path(tmp))
        cases = [
            ("default: `pdd-plan solve`", ["solve"]),
            ("`pdd-plan --help`", ["--help"]),
            ("`pdd-plan catalog list`", ["catalog", "list"]),
            ("default: `pdd-plan evaluate` its plan", ["evaluate", "default", str(plan)]),
        ]
        for label, args in cases:
            wall, cpu = cli_s(args, repeats)
            print(f"{label:34} {wall:8.2f} {cpu:8.2f}")
        for label, jobs in (("default: API, side by side", None), ("default: API, in turn", 1)):
            wall, cpu = python_s(API_SOLVE.format(jobs=jobs), repeats)
            print(f"{label:34} {wall:8.2f} {cpu:8.2f}")
        if stages:
            print_stages(["solve"], repeats)
            print_stages(["evaluate", str(plan)], repeats)
        if report:
            html = str(Path(tmp) / "report.html")
            wall, cpu = cli_s(["report", "default", "-o", html, "--no-progress"], 1)
            print(f"{'default: `pdd-plan report` (once)':34} {wall:8.2f} {cpu:8.2f}")
    print(f"load average (1, 5, 15 min) at end: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5, help="runs per figure (median)")
    parser.add_argument(
        "--default-only", action="store_true", help="the processes and the in-process default"
    )
    parser.add_argument("--report", action="store_true", help="also time `pdd-plan report`")
    parser.add_argument(
        "--stages", action="store_true", help="also the CPU by stage of solve and evaluate"
    )
    parser.add_argument(
        "--types",
        default=None,
        help="comma-separated type counts, in process only (e.g. 17,51: issue #15's large "
        "catalogs); skips the processes",
    )
    parser.add_argument("--time-limit", type=float, default=30.0, help="each solve's limit, s")
    parser.add_argument(
        "--shapes",
        type=int,
        default=0,
        choices=range(len(SHAPE_LADDER) + 1),
        metavar=f"0..{len(SHAPE_LADDER)}",
        help="with --types: instance sizes per type (0: the planner's default shapes)",
    )
    args = parser.parse_args()
    if args.types is None:
        print_processes(args.repeats, args.report, args.stages)
    catalog = Catalog()
    base = load_scenario(resolve_scenario_path("default"), catalog)
    model = catalog.model_for(base)

    def run(s: Scenario):
        return solve(s, model, catalog.gpus, catalog.lines, "pdd", time_limit_s=args.time_limit)

    if args.types is not None:
        counts = [int(n) for n in args.types.split(",")]
        print_types(counts, base, catalog, run, args.repeats, args.shapes)
        return

    print(f"median of {args.repeats} runs; objective {base.objective.kind}, pdd")
    print(f"{'case':34} {'wall s':>8} {'usable cand.':>12} {'status':>10} {'evals':>6} plan")
    t, r = median_s(lambda: run(base), args.repeats)
    print(f"{'default: solve() in process':34} {t:8.2f} {_row(r)}")
    if args.default_only:
        return
    rows = []
    for n in TYPE_COUNTS:
        scenario = with_types(base, catalog, n)
        t, r = median_s(lambda s=scenario: run(s), args.repeats)
        rows.append((n, t, _usable(r)))
        label = f"{n} GPU types, 3 datacenters"
        print(f"{label:34} {t:8.2f} {_row(r)}")
    print("growth (time ~ types^k between neighbours):")
    for (n0, t0, c0), (n1, t1, c1) in zip(rows, rows[1:], strict=False):
        k = math.log(t1 / t0) / math.log(n1 / n0)
        print(
            f"  {n0:>2} -> {n1:>2} types: x{t1 / t0:.2f} time, candidates {c0} -> {c1}, k = {k:.2f}"
        )


def print_types(counts, base: Scenario, catalog: Catalog, run, repeats: int, shapes: int) -> None:
    """Each N-type scenario's PDD solve: median wall and CPU (process_time) of `repeats`."""
    print(f"median of {repeats} runs; objective {base.objective.kind}, pdd")
    print(f"{'case':34} {'wall s':>8} {'CPU s':>8} {'usable cand.':>12} {'status':>10} "
          f"{'evals':>6} plan")  # fmt: skip
    for n in counts:
        scenario = with_types(base, catalog, n, shapes)
        walls, cpus, result = [], [], None
        for _ in range(repeats):
            cpu, start = time.process_time(), time.perf_counter()
            result = run(scenario)
            walls.append(time.perf_counter() - start)
            cpus.append(time.process_time() - cpu)
        label = f"{n} GPU types x {shapes or 'default'} shapes, 3 DCs"
        wall, cpu = statistics.median(walls), statistics.median(cpus)
        print(f"{label:34} {wall:8.2f} {cpu:8.2f} {_row(result)}", flush=True)


def _row(result) -> str:
    """Usable candidates, status (with `?` when the search did not prove it), plans
    evaluated, plan."""
    status = result.status + ("" if getattr(result, "proven", True) else "?")
    evals = getattr(result, "evaluations", 0)
    return f"{_usable(result):12d} {status:>10} {evals:6d} {_plan(result)}"


def _usable(result) -> int:
    return sum(1 for c in result.candidates if not c.pruned and c.capacity_rps > 0)


def _plan(result) -> str:
    if result.deployment is None:
        return "-"
    return ", ".join(
        f"{g.role} {g.count}x{g.gpus_per_instance} {g.gpu}@{g.datacenter}"
        for g in result.deployment.instances
    )


if __name__ == "__main__":
    main()
