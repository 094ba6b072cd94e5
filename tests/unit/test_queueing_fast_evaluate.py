"""evaluate's short cuts (#15 Build 1) change no answer: `meets_sla` computes only what
the SLA asks, yet says what the snapshot's `sla_checks` say; `evaluate` hands its answer
at the offered rate to the goodput search, which then finds what a fresh search finds."""

from __future__ import annotations

import dataclasses

import pytest

from pdd_plan.errors import SaturatedError
from pdd_plan.loaders.plan_file import load_plan
from pdd_plan.loaders.scenario import load_scenario, resolve_scenario_path, scenarios_dir
from pdd_plan.model import evaluate as ev
from pdd_plan.model.scenario import Sla

FACTORS = (0.05, 0.3, 0.5, 0.7, 0.8, 0.9, 0.95, 0.98, 1.0, 1.5)
ARCHS = ("pdd", "cdc_pd", "idc_pd")
# the shipped SLA (these plans saturate before it binds), and SLAs whose TTFT or TPOT
# percentiles bind below saturation: limits at the plan's own percentiles at 0.8 of the
# rate that saturates it, so that each is met below that rate and missed above it
SLAS = ("shipped", "ttft", "tpot")


def _sla(kind: str, snap) -> Sla:
    if kind == "ttft":
        return Sla({50.0: snap.ttft_s["p50"], 90.0: snap.ttft_s["p90"]}, {90.0: 1.0})
    return Sla({90.0: 1e3}, {50.0: snap.tpot_s["p50"], 99.0: snap.tpot_s["p99"]})


@pytest.fixture(scope="module")
def setups(catalog):
    paper = load_scenario(resolve_scenario_path("pdd-paper"), catalog)
    model = catalog.model_for(paper)

    def setup(scenario, arch):
        plan = load_plan(scenarios_dir() / "plans" / f"pdd-paper-{arch}.yaml", scenario, catalog)
        return ev.prepare(scenario, plan, model, catalog.gpus, catalog.lines, (1, 6, 12))

    out = {}
    for arch in ARCHS:
        out["shipped", arch] = shipped = setup(paper, arch)
        snap = ev.snapshot(shipped, 0.8 * _saturation_rps(shipped))
        for kind in SLAS[1:]:  # the same plan (batch limits too) judged by another SLA
            judged = dataclasses.replace(paper, sla=_sla(kind, snap))
            out[kind, arch] = dataclasses.replace(shipped, scenario=judged)
    return out


def _saturation_rps(setup) -> float:
    """The least rate (to 1e-3) at which some queue saturates."""
    high = 1.0
    while _saturated(setup, high):
        high /= 2
    low = high
    while not _saturated(setup, high):
        low, high = high, 2 * high
    while high - low > 1e-3 * high:
        mid = (low + high) / 2
        low, high = (low, mid) if _saturated(setup, mid) else (mid, high)
    return high


def _saturated(setup, rate: float) -> bool:
    try:
        ev.snapshot(setup, rate)
    except SaturatedError:
        return True
    return False


def _checks(setup, rate: float) -> dict | None:
    try:
        return ev.sla_checks(setup, ev.snapshot(setup, rate))
    except SaturatedError:
        return None


def _checks_say(setup, rate: float) -> bool:
    """The reference: every check of the full snapshot, as `evaluate` shows them."""
    checks = _checks(setup, rate)
    return checks is not None and all(c["value"] <= c["limit"] for c in checks.values())


@pytest.mark.slow
@pytest.mark.parametrize("sla", SLAS)
@pytest.mark.parametrize("arch", ARCHS)
def test_meets_sla_says_what_the_snapshot_checks_say(setups, arch, sla):
    setup = setups[sla, arch]
    top = _saturation_rps(setup)
    missed_checks = set()
    answers = []
    for f in FACTORS:
        rate = top * f
        answers.append(ev.meets_sla(setup, rate))
        assert answers[-1] == _checks_say(setup, rate), f
        checks = _checks(setup, rate) or {}
        missed_checks |= {k[:4] for k, c in checks.items() if c["value"] > c["limit"]}
    assert True in answers and False in answers  # the table crosses the SLA's edge
    if sla != "shipped":  # the percentile named binds before saturation
        assert sla in missed_checks


def test_meets_sla_skips_tpot_when_ttft_already_fails(setups, monkeypatch):
    setup = setups["ttft", "pdd"]
    rate = _saturation_rps(setup) * 0.95
    checks = _checks(setup, rate)
    assert checks["ttft_p90_s"]["value"] > checks["ttft_p90_s"]["limit"]  # not saturated
    monkeypatch.setattr(ev, "tpot_rows", lambda *a: pytest.fail("TPOT rows computed"))
    assert ev.meets_sla(setup, rate) is False


@pytest.mark.parametrize("arch", ["pdd", "idc_pd"])
def test_evaluate_goodput_equals_a_fresh_search(setups, arch):
    setup = setups["ttft", arch]
    fresh = ev.goodput_rps(setup)
    for rate in (fresh * 0.5, fresh * 1.2, None):  # met, missed, the scenario's own rate
        metrics, _ = ev.evaluate(setup, rate)
        assert metrics.goodput_rps == fresh
        assert metrics.sla_met == _checks_say(setup, metrics.offered_rps)


def test_evaluate_never_recomputes_the_offered_rate(setups, monkeypatch):
    setup = setups["shipped", "idc_pd"]
    asked = []
    meets = ev.meets_sla
    monkeypatch.setattr(ev, "meets_sla", lambda s, r: asked.append(r) or meets(s, r))
    offered = setup.scenario.workload.arrival_rate_per_s
    ev.evaluate(setup)
    assert offered not in asked


def test_answered_rates_are_asked_no_more_and_never_override_the_bracket(monkeypatch):
    from types import SimpleNamespace

    setup = SimpleNamespace(scenario=SimpleNamespace(workload=SimpleNamespace(
        arrival_rate_per_s=20.0)))  # fmt: skip
    asked = []
    monkeypatch.setattr(ev, "meets_sla", lambda s, r: asked.append(r) or r <= 33.3)
    plain = ev.goodput_rps(setup)
    assert 33.3 * (1 - 1e-3) <= plain <= 33.3  # the step's edge, by the bisection's tolerance
    asked.clear()
    assert ev.goodput_rps(setup, answered={20.0: True}) == plain
    assert 20.0 not in asked  # the search's first question, answered
    # a bracket that says 20 was missed is obeyed before any answer (as before `answered`)
    asked.clear()
    bracketed = ev.goodput_rps(setup, known=(0.0, 20.0), answered={20.0: True})
    assert bracketed == ev.goodput_rps(setup, known=(0.0, 20.0)) < 20.0
