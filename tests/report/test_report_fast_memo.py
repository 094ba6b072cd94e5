"""solve_memo.py: inside `shared_solves()` a call made again with every argument the same
is answered from the first (a copy, or its exception again); any argument changed is a
new solve; outside a scope every call solves. And report_cases.point_and_case, the task
that uses it, answers as the two calls made apart."""

from __future__ import annotations

import dataclasses
from concurrent.futures import Future
from pathlib import Path

import numpy as np
import pytest

from pdd_plan import api
from pdd_plan.loaders.catalog import Catalog
from pdd_plan.loaders.scenario import load_scenario
from pdd_plan.loaders.strict import load_yaml
from pdd_plan.plan import solve as sv
from pdd_plan.plan.scenario_edit import HIT_MEAN_KEY
from pdd_plan.plan.variants import sensitivity_cases
from pdd_plan.stages.reporting import report_build
from pdd_plan.stages.reporting.report_cases import _case_in_worker, point_and_case
from pdd_plan.stages.solving.solve_memo import memoised, shared_solves
from pdd_plan.stages.sweeping import sweep as sw

TINY = Path(__file__).parent.parent / "sweep" / "tiny.yaml"
COARSE = (2, 3, 8)


@dataclasses.dataclass(frozen=True)
class Variant:
    rate: float
    shares: tuple = (0.5, 0.5)


class Fake:
    """A solve that counts its calls and answers a fresh dict (or raises on rate < 0)."""

    def __init__(self):
        self.calls = 0

        @memoised
        def solve(s, architecture="pdd", catalog=None, resolution=(1, 2, 3), time_limit_s=30.0,
                  deadline=None):  # fmt: skip
            self.calls += 1
            if s.rate < 0:
                raise ValueError(f"bad rate {s.rate}")
            return {"rate": s.rate, "notes": []}, ("files", self.calls)

        self.solve = solve


def test_the_same_call_solves_once_and_hands_out_copies():
    fake = Fake()
    with shared_solves():
        first, files = fake.solve(Variant(1.0), "pdd")
        first["notes"].append("annotated by the first caller")
        again, files_again = fake.solve(Variant(1.0), architecture="pdd")  # same, by keyword
    assert fake.calls == 1
    assert again == {"rate": 1.0, "notes": []}  # the answer as solved, not as annotated
    assert files_again == files == ("files", 1)


CATALOG = object()


@pytest.mark.parametrize(
    "changed",
    [
        {"s": Variant(2.0)},
        {"s": Variant(1.0, (0.4, 0.6))},
        {"architecture": "cdc_pd"},
        {"catalog": object()},  # another catalog object: it could hold other entries
        {"resolution": (1, 2, 4)},
        {"time_limit_s": 29.0},
        {"deadline": 123.0},
    ],
)
def test_any_argument_changed_is_a_new_solve(changed):
    fake = Fake()
    base = {"s": Variant(1.0), "architecture": "pdd", "catalog": CATALOG,
            "resolution": (1, 2, 3), "time_limit_s": 30.0, "deadline": None}  # fmt: skip
    with shared_solves():
        fake.solve(**base)
        fake.solve(**base)
        assert fake.calls == 1
        fake.solve(**{**base, **changed})
        assert fake.calls == 2


def test_outside_a_scope_or_in_a_new_one_every_call_solves():
    fake = Fake()
    fake.solve(Variant(1.0))
    fake.solve(Variant(1.0))
    assert fake.calls == 2
    with shared_solves():
        fake.solve(Variant(1.0))
    with shared_solves():  # the memo ended with its scope: memory stays flat
        fake.solve(Variant(1.0))
    assert fake.calls == 4


def test_an_exception_is_raised_again_and_an_array_is_a_miss():
    fake = Fake()
    with shared_solves():
        for _ in range(2):
            with pytest.raises(ValueError, match="bad rate -1"):
                fake.solve(Variant(-1.0))
        assert fake.calls == 1
        # arrays compare element-wise (no single truth value): never equal, never an error
        fake.solve(Variant(1.0, np.array([0.5, 0.5])))
        fake.solve(Variant(1.0, np.array([0.5, 0.5])))
        assert fake.calls == 3


def test_parts_pass_on_the_answer_or_the_exception():
    whole = Future()
    row, entry = report_build._parts(whole)
    whole.set_result(({"row": 1}, {"entry": 2}))
    assert row.result() == {"row": 1} and entry.result() == {"entry": 2}
    whole = Future()
    row, entry = report_build._parts(whole)
    whole.set_exception(RuntimeError("worker died"))
    for part in (row, entry):
        with pytest.raises(RuntimeError, match="worker died"):
            part.result()


@pytest.mark.slow
def test_point_and_case_answers_as_the_two_calls_made_apart(monkeypatch):
    catalog = Catalog()
    data = load_yaml(TINY, "a pdd-plan scenario")
    sweep = sw.Sweep(str(TINY), data, ({HIT_MEAN_KEY: 0.7},), architecture="pdd",
                     resolution=COARSE, time_limit_s=30.0)  # fmt: skip
    case = next(c for c in sensitivity_cases(load_scenario(TINY, catalog), catalog)
                if c[0] == "hit rate 0.7")  # fmt: skip
    solves = []
    real = sv.solve
    monkeypatch.setattr(sv, "solve", lambda *a, **k: solves.append(a[4]) or real(*a, **k))
    row, entry = point_and_case(sweep, 0, case)
    assert solves == ["pdd"]  # one solve for both
    apart_row = sw.run_point(sweep, 0)
    apart_entry = _case_in_worker(*case, "pdd", COARSE, 30.0)
    assert len(solves) == 3  # apart: each solves
    assert row["status"] == "optimal"
    del row["wall_s"], apart_row["wall_s"]  # the one field two equal runs differ in
    assert row == apart_row
    assert entry == apart_entry and entry["plan"] == row["plan"]


def test_a_lean_solve_is_the_full_one_less_its_arithmetic_and_files():
    """Sweep rows and report cases solve `lean`: what they keep is the full solve's."""
    catalog = Catalog()
    s = load_scenario(TINY, catalog)
    full, files = api.solve_loaded(s, "pdd", catalog, COARSE)
    lean, lean_files = api.solve_loaded(s, "pdd", catalog, COARSE, lean=True)
    assert full["role_arithmetic"] and lean["role_arithmetic"] is None
    for out in (full, lean):
        del out["solver"]["wall_s"]  # the one field two equal solves differ in
    assert lean == {**full, "role_arithmetic": None}
    assert files.bom_csv.count("\n") > 3 and lean_files.bom_csv == ""
