"""Subcommands load on demand (#15 Build 2, cli/lazy.py): `pdd-plan --help` imports no
command module, so neither the models, scipy, the optimiser nor the simulator; its listing
is the same as with every command loaded; running a command loads that one alone.

The expectations are the issue's (nothing heavy for `--help`) and the command list of the
README's CLI section, not recordings of what the code printed.
"""

from __future__ import annotations

import json
import subprocess
import sys

import typer

from pdd_plan.cli.app import COMMANDS, app

# the README's commands: ten commands, `version`, five groups
EXPECTED = [
    "estimate",
    "evaluate",
    "solve",
    "schedule",
    "compare",
    "explain",
    "simulate",
    "sweep",
    "report",
    "deploy",
    "validate",
    "schema",
    "version",
    "catalog",
    "model",
    "scenario",
    "trace",
    "calibrate",
]
# what `--help` must leave out: the optimiser, scipy, the simulator, the models, numpy
HEAVY = ("scipy", "pulp", "numpy", "pdd_plan.plan", "pdd_plan.sim", "pdd_plan.model")

PROBE = """
import json, sys
from pdd_plan.cli.app import main
for args in json.loads(sys.argv[1]):  # one command line, or several in turn
    try:
        main(args)
    except SystemExit as exc:
        assert exc.code in (0, None), exc.code
heavy = json.loads(sys.argv[2])
loaded = sorted(m for m in sys.modules if any(m == h or m.startswith(h + ".") for h in heavy)
                and m not in ("pdd_plan.model", "pdd_plan.model.units"))  # constants, no imports
commands = sorted(m for m in sys.modules if m.startswith("pdd_plan.cli.") and m.endswith("_cmd"))
print("PROBE=" + json.dumps({"heavy": loaded, "commands": commands}))
"""


def _probe(*args: list[str], heavy: tuple[str, ...] = HEAVY) -> tuple[str, dict]:
    """Run each command line of `args` in one fresh interpreter: its output, and which
    modules of the `heavy` families and which command modules it loaded."""
    done = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(args), json.dumps(heavy)],
        capture_output=True,
        text=True,
        timeout=120,
        env={"COLUMNS": "200", "PATH": "/usr/bin:/bin"},
    )
    lines = [x for x in done.stdout.splitlines() if x.startswith("PROBE=")]
    assert done.returncode == 0 and lines, done.stdout[-2000:] + done.stderr[-2000:]
    return done.stdout, json.loads(lines[-1][len("PROBE=") :])


def _listed(text: str) -> list[str]:
    """Command names in the order the help's Commands panel lists them."""
    panel = text.split("Commands")[1]
    rows = [line for line in panel.splitlines()[1:] if line.startswith("│ ")]
    return [line.split()[1] for line in rows if line[2] != " "]  # not a continuation


def test_top_level_help_lists_every_command_and_loads_nothing_heavy():
    text, loaded = _probe(["--help"])
    assert _listed(text) == EXPECTED
    assert loaded["heavy"] == []
    assert loaded["commands"] == []


def test_a_subcommand_loads_its_own_module_alone():
    text, loaded = _probe(["sweep", "--help"])
    assert "--jobs" in text  # the command's own options: its real help
    assert loaded["commands"] == ["pdd_plan.cli.sweep_cmd"]


def test_every_subcommands_help_loads_nothing_heavy():
    """Each command imports its models, scipy and the optimiser when it runs, not for its
    help. `calibrate` is left out: its module (not this work's) needs the engine profile's
    numpy at import."""
    names = [n for n in EXPECTED if n not in ("version", "calibrate")]
    text, loaded = _probe(*([n, "--help"] for n in names))
    assert text.count("Usage: pdd-plan ") == len(names)  # every help was printed
    assert len(loaded["commands"]) == len(names)
    assert loaded["heavy"] == []


def test_the_lazy_listing_equals_the_listing_with_every_command_loaded(capsys, monkeypatch):
    """Every summary copied into app.py equals its command's first help paragraph, so
    the listing is the same either way."""
    monkeypatch.setenv("COLUMNS", "120")
    group = typer.main.get_command(app)
    ctx = group.make_context("pdd-plan", ["--help"], resilient_parsing=True)
    group.get_help(ctx)
    lazy = capsys.readouterr().out
    built = dict(group.commands.items())  # reading the values loads every command
    for name, command in built.items():
        if name != "version":  # registered eagerly
            assert command.help.split("\n\n")[0] == COMMANDS[name].summary, name
    group.get_help(ctx)
    assert capsys.readouterr().out == lazy
    assert _listed(lazy) == EXPECTED


def test_names_and_membership_do_not_load_a_command():
    group = typer.main.get_command(app)
    built = group.commands._built
    assert "solve" in group.commands and "nope" not in group.commands
    assert list(group.commands) == EXPECTED and len(group.commands) == len(EXPECTED)
    assert set(built) == {"version"}
    assert group.commands["catalog"].name == "catalog"  # reading one loads that one
    assert set(built) == {"version", "catalog"}
