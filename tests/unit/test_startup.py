"""Start-up loads only what a command needs (#15 Build 2): the help texts and the catalog
listing import neither the optimiser (PuLP, pdd_plan.plan) nor scipy.

Each case runs the CLI's `main` in a fresh interpreter and lists the heavy modules it
loaded; the expectation (none) is the issue's requirement, not a recording.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = ("scipy", "pulp", "pdd_plan.plan")
PROBE = """
import importlib, json, sys
for name in sys.argv[2:]:  # modules the caller loads first (to show the probe sees them)
    importlib.import_module(name)
from pdd_plan.cli.app import main
try:
    main(json.loads(sys.argv[1]))
except SystemExit as exc:
    code = exc.code
else:
    code = 0
heavy = sorted(m for m in sys.modules if m.split(".")[0] in {"scipy", "pulp"}
               or m == "pdd_plan.plan" or m.startswith("pdd_plan.plan."))
print("HEAVY=" + json.dumps({"code": code, "modules": heavy}))
"""


def _loaded(args: list[str], preload: tuple[str, ...] = ()) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(args), *preload],
        capture_output=True,
        text=True,
        timeout=120,
    )
    lines = [x for x in done.stdout.splitlines() if x.startswith("HEAVY=")]
    assert lines, done.stdout[-2000:] + done.stderr[-2000:]
    return json.loads(lines[-1][len("HEAVY=") :])


@pytest.mark.parametrize(
    "args",
    [["--help"], ["catalog", "list"], ["solve", "--help"], ["calibrate", "--help"]],
    ids=lambda a: " ".join(a),
)
def test_light_commands_load_neither_the_optimiser_nor_scipy(args):
    result = _loaded(args)
    assert result["code"] in (0, None)
    assert result["modules"] == []


@pytest.mark.slow
def test_the_probe_sees_heavy_modules_when_they_are_loaded():
    """The probe can fail: a command that needs scipy (the workload's lognormal) shows
    it, and the optimiser's modules show when they are in the process."""
    result = _loaded(["scenario", "validate"])
    assert result["code"] in (0, None)
    assert any(m.startswith("scipy.special") for m in result["modules"])
    result = _loaded(["--help"], preload=("pulp", "pdd_plan.plan.candidates"))
    assert "pulp" in result["modules"] and "pdd_plan.plan.candidates" in result["modules"]
