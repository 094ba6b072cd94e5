"""Issue #24 item 4: every `--out` says everything it writes.

Each command is run with `--out` and every file it left is looked for in the option's
help (a plot by its name and `.*`, written as SVG and PNG); `solve --out` also says the
report costs what `--report` does (it solves the sensitivity cases). The files are what
the run wrote, not a list copied from the code.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.test_calibrate import _fpm_text
from tests.hardening.test_outputs import tiny_scenario


def _out_help(run_cli, *command: str) -> str:
    """The `--out` row of the command's help, its lines joined."""
    text = run_cli(*command, "--help").stdout
    rows = text.split("--out", 1)[1].split("\n│ --", 1)[0]
    return " ".join(w for line in rows.splitlines() for w in line.strip("│ ").split())


def _named(name: str, help_text: str) -> bool:
    stem, suffix = Path(name).stem, Path(name).suffix
    return name in help_text or (suffix in (".svg", ".png") and f"{stem}.*" in help_text)


def test_solve_out_names_every_file_and_the_report(run_cli, tmp_path):
    tiny_scenario(tmp_path)
    done = run_cli("solve", "tiny.yaml", "--out", "run", "--format", "json")
    assert done.returncode == 0, done.stderr
    said = _out_help(run_cli, "solve")
    written = sorted(p.name for p in (tmp_path / "run").iterdir())
    assert "report.md" in written
    assert [n for n in written if not _named(n, said)] == []
    assert "sizing report" in said and "sensitivity cases" in said


@pytest.mark.slow
def test_sweep_out_names_every_file(run_cli, tmp_path):
    tiny_scenario(tmp_path)
    done = run_cli("sweep", "tiny.yaml", "--vary", "workload.arrival_rate_per_s=1,2",
                   "--jobs", "1", "--out", "out", "--format", "json")  # fmt: skip
    assert done.returncode == 0, done.stderr
    said = _out_help(run_cli, "sweep")
    written = sorted(p.name for p in (tmp_path / "out").iterdir())
    assert any(n.endswith(".png") for n in written)  # the plots are there to be named
    assert [n for n in written if not _named(n, said)] == []
    assert ".sweep-journal.jsonl" in said and "--resume" in said  # while it runs


@pytest.mark.slow
def test_calibrate_out_writes_the_one_profile_it_names(run_cli, tmp_path):
    (tmp_path / "fpm.csv").write_text(_fpm_text())
    done = run_cli("calibrate", "steps", "fpm.csv", "--model", "qwen3_32b", "--gpu", "b300",
                   "-o", "p.yaml", "--no-cv")  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fpm.csv", "p.yaml"]
    assert "profile YAML" in _out_help(run_cli, "calibrate", "steps")
