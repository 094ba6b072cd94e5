"""The sizing report's extra solves, in the process pool of its plot cases when it has one.

The report solves, besides the plan it reports on (never again: the caller passes it in),
each sensitivity case (other hit rates, prices: `plan.variants.sensitivity_cases`) and
every architecture not solved yet (the compare section). Each is independent of the
others, so they go to the report's pool (report_build.py) as soon as the scenario is
known, and this process explains the plan meanwhile. Each answer is exactly the one the
solve would give in this process: a case that fails in a worker other than by having no
plan is solved again here, so its exception is raised as it would be without the pool.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Executor, Future
from dataclasses import dataclass

from pdd_plan.loaders.catalog import Catalog
from pdd_plan.model.scenario import Scenario
from pdd_plan.model.workload.workload import DEFAULT_RESOLUTION
from pdd_plan.plan.variants import sensitivity_cases
from pdd_plan.stages.solving.case_entry import CaseSolve, case_entry  # noqa: F401  (the report's API)

EXPLAIN = "explain"  # the task that explains the plan, beside the cases


def explanation(
    s: Scenario,
    architecture: str,
    catalog: Catalog,
    resolution: tuple[int, int, int] = DEFAULT_RESOLUTION,
    time_limit_s: float = 30.0,
    solved=None,
) -> dict | None:
    """`pdd_plan.plan.explain.explain` for the report's explain section (which limits of
    the MILP bind and what relaxing each is worth, each by a re-solve); `solved`: the
    plan's own solve (SolveFiles.run), not made again."""
    from pdd_plan.plan.explain import explain

    return explain(
        s, catalog.model_for(s), catalog.gpus, catalog.lines, architecture, resolution,
        time_limit_s, solved,
    )  # fmt: skip


@dataclass(frozen=True)
class ReportTask:
    """A case of `sensitivity_cases`, or EXPLAIN: the plan explained from its own solve."""

    s: Scenario
    architecture: str
    catalog: Catalog
    resolution: tuple[int, int, int]
    time_limit_s: float
    solved_run: object | None

    def __call__(self, item) -> dict | None:
        run = (self.resolution, self.time_limit_s)
        if item == EXPLAIN:
            return explanation(self.s, self.architecture, self.catalog, *run,
                               solved=self.solved_run)  # fmt: skip
        return case_entry(*item, self.architecture, self.catalog, *run)


def cases_and_explanation(s: Scenario, architecture: str, catalog: Catalog, run, solved_run,
                          progress=None) -> tuple[list[dict], dict | None]:  # fmt: skip
    """The sensitivity cases and the explanation, side by side in processes forked from
    this one (fork_pool.py; in turn where it cannot fork); explain first, the longest."""
    from pdd_plan.stages import fork_pool
    from pdd_plan.stages.solving import solve_service

    cases = sensitivity_cases(s, catalog)
    finished = [0]

    def done(_n: int, index: int) -> None:
        if not progress:
            return
        if index == 0:
            progress(solve_service.EXPLAIN_STAGE, 1, 1)
        else:
            finished[0] += 1
            progress(solve_service.CASES_STAGE, finished[0], len(cases))

    if progress:
        progress(solve_service.CASES_STAGE, 0, len(cases))
        progress(solve_service.EXPLAIN_STAGE, 0, 1)
    task = ReportTask(s, architecture, catalog, *run, solved_run)
    explained, *entries = fork_pool.each(task, [EXPLAIN, *cases], None, done)
    return entries, explained


def _case_in_worker(*args) -> dict | None:
    from pdd_plan.stages.sweeping.sweep import worker_catalog

    case, change, variant, architecture, resolution, time_limit_s = args
    try:
        return case_entry(case, change, variant, architecture, worker_catalog(), resolution,
                          time_limit_s)  # fmt: skip
    except Exception:  # not every error survives pickling: the caller raises it again
        return None


def point_and_case(sweep, index: int, case: tuple[str, str, Scenario]) -> tuple[dict, dict | None]:
    """Point `index` of the report's plot sweep (its row) and the sensitivity case of the
    same variant (its entry, as `_case_in_worker` gives it), in one worker task: the second
    reuses the first's solve (solve_memo.py), or solves anew where the two differ."""
    from pdd_plan.stages.solving.solve_memo import shared_solves
    from pdd_plan.stages.sweeping.sweep import run_point

    with shared_solves():
        row = run_point(sweep, index)
        entry = _case_in_worker(*case, sweep.architecture, sweep.resolution, sweep.time_limit_s)
    return row, entry


def submit_case(pool: Executor, case: tuple[str, str, Scenario], architecture: str,
                resolution, time_limit_s: float) -> Future:  # fmt: skip
    """The future of one sensitivity case's entry, solved in `pool` (`Pending` takes it)."""
    return pool.submit(_case_in_worker, *case[:2], case[2], architecture, resolution,
                       time_limit_s)  # fmt: skip


def submit_arch(pool: Executor, s: Scenario, arch: str, resolution, time_limit_s: float):
    """The future of one other architecture's result, solved in `pool`."""
    return pool.submit(_arch_in_worker, s, arch, resolution, time_limit_s)


def _arch_in_worker(s: Scenario, arch: str, resolution, time_limit_s: float) -> dict | None:
    from pdd_plan.stages.solving import solve_service
    from pdd_plan.stages.sweeping.sweep import worker_catalog

    try:
        result, _ = solve_service.ArchSolve(s, worker_catalog(), resolution, time_limit_s)(arch)
    except Exception:  # as above
        return None
    return result


@dataclass
class Pending:
    """The report's extra solves, submitted to a pool; their answers in the caller's order."""

    s: Scenario
    architecture: str
    catalog: Catalog
    resolution: tuple[int, int, int]
    time_limit_s: float
    cases: list[tuple[tuple[str, str, Scenario], Future]]
    archs: list[tuple[str, Future]]

    @classmethod
    def submit(cls, pool: Executor, s: Scenario, architecture: str, catalog: Catalog,
               resolution, time_limit_s: float, other_archs,
               given: dict[str, Future] | None = None) -> Pending:  # fmt: skip
        """`given`: case name (or architecture) -> the future of its entry (result),
        already submitted (`submit_case`, `submit_arch`, or a plot point of the same
        variant, `point_and_case`): not submitted again."""
        run, given = (resolution, time_limit_s), given or {}
        cases = [(c, given.get(c[0]) or submit_case(pool, c, architecture, *run))
                 for c in sensitivity_cases(s, catalog)]  # fmt: skip
        archs = [(a, given.get(a) or submit_arch(pool, s, a, *run)) for a in other_archs]
        return cls(s, architecture, catalog, resolution, time_limit_s, cases, archs)

    def case_entries(self, progress: Callable[[int, int], None] | None = None) -> list[dict]:
        out = []
        for (case, change, variant), future in self.cases:
            entry = _answer(future)
            if entry is None:  # solved again here: its exception is raised as it is
                entry = case_entry(case, change, variant, self.architecture, self.catalog,
                                   self.resolution, self.time_limit_s)  # fmt: skip
            out.append(entry)
            if progress:
                progress(len(out), len(self.cases))
        return out

    def known(self) -> dict[str, dict]:
        """Each other architecture's result (`solve_service.solve_each`'s entry), by name."""
        from pdd_plan.stages.solving import solve_service

        out = {}
        for arch, future in self.archs:
            result = _answer(future)
            if result is None:
                run = (self.s, self.catalog, self.resolution, self.time_limit_s)
                result, _ = solve_service.ArchSolve(*run)(arch)
            out[arch] = result
        return out


def _answer(future: Future):
    try:
        return future.result()
    except Exception:  # a worker that died: the caller solves it itself
        return None
