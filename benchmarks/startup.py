"""Start-up of `pdd-plan`: `--help`, `version`, `catalog list` and every subcommand's `--help`
as fresh processes, with what each one loads, and the floors under them.

Target (issue #15, idle 2-core machine): `pdd-plan --help` <= 0.3 s wall.
Run: python benchmarks/startup.py [--repeats 5]  (prints figures; asserts nothing).
Each figure is the median wall time and the median CPU time (user + system) of fresh
processes; on a shared machine the CPU time is the steadier figure, and the load average
printed first says how shared it was. `heavy` lists the families each command's process
loaded (a second, separate run per command: the listing costs nothing in the timed ones).
The floors are bare imports: Python itself, typer with its rich help formatter (what any
help text needs), and pydantic (typer 0.29 coerces command-line values with it; the CLI's
plain values skip it, pdd_plan/cli/fast_params.py, so `heavy` shows it only where a value
needs typer's conversion).
With PYTHONDONTWRITEBYTECODE=1 (set on shared dev machines) a module edited since its
bytecode was written is recompiled by every process: the figures then include that, and
the first line says how many pdd_plan modules are affected
(`python -m compileall -q pdd_plan` first gives the installed figures).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from solve import cli_s, python_s  # noqa: E402  (the same timing as benchmarks/solve.py)

from pdd_plan.cli.app import COMMANDS  # noqa: E402

# every lazily registered command, as the CLI lists them (its --help imports nothing heavy)
SUBCOMMANDS = list(COMMANDS)
FAMILIES = ("numpy", "scipy", "pulp", "pydantic", "pdd_plan.model", "pdd_plan.plan", "pdd_plan.sim")
PROBE = """
import json, sys
from pdd_plan.cli.app import main
try:
    main(json.loads(sys.argv[1]))
except SystemExit:
    pass
families = json.loads(sys.argv[2])
print("HEAVY=" + json.dumps([f for f in families
                             if any(m == f or m.startswith(f + ".") for m in sys.modules)]))
"""
FLOORS = (
    ("python alone", "pass"),
    ("import typer + its rich help", "import typer, typer.rich_utils"),
    ("... + pydantic (argument values)", "import typer, typer.rich_utils, typer._adapters"),
)


def heavy(args: list[str]) -> str:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(args), json.dumps(FAMILIES)],
        capture_output=True,
        text=True,
        check=True,
    )
    line = [x for x in done.stdout.splitlines() if x.startswith("HEAVY=")][-1]
    return ", ".join(json.loads(line[len("HEAVY=") :])) or "-"


def stale_modules() -> int:
    """pdd_plan modules whose source is newer than their bytecode (or has none)."""
    import importlib.util
    from pathlib import Path

    package = Path(__file__).resolve().parent.parent / "pdd_plan"
    stale = 0
    for source in package.rglob("*.py"):
        compiled = Path(importlib.util.cache_from_source(str(source)))
        if not compiled.exists() or compiled.stat().st_mtime < source.stat().st_mtime:
            stale += 1
    return stale


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5, help="runs per figure (median)")
    repeats = parser.parse_args().repeats
    stale = stale_modules()
    if stale:
        print(f"note: {stale} pdd_plan modules have stale or no bytecode (recompiled by every "
              "process when PYTHONDONTWRITEBYTECODE is set)")  # fmt: skip
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"load average (1, 5, 15 min) at start: {load}")
    print(f"{'process (median of ' + str(repeats) + ')':36} {'wall s':>7} {'CPU s':>7}  heavy")
    cases = [["--help"], ["version"], ["catalog", "list"]]
    cases += [[name, "--help"] for name in SUBCOMMANDS]
    for args in cases:
        wall, cpu = cli_s(args, repeats)
        label = "`pdd-plan " + " ".join(args) + "`"
        print(f"{label:36} {wall:7.2f} {cpu:7.2f}  {heavy(args)}")
    print("floors (bare imports):")
    for label, code in FLOORS:
        wall, cpu = python_s(code, repeats)
        print(f"  {label:34} {wall:7.2f} {cpu:7.2f}")
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"load average (1, 5, 15 min) at end: {load}")


if __name__ == "__main__":
    main()
