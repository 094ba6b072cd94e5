"""Plain `pytest` leaves the slow tests out; CI (.ci/run) runs every one (issue #24 item 3).

The checks run pytest on a two-test project in tmp_path that carries this repository's own
[tool.pytest.ini_options], so what they prove is the configuration's effect, not its text.
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

TWO_TESTS = """
import pytest

def test_plain():
    pass

@pytest.mark.slow
def test_long():
    pass
"""


def pytest_options() -> dict:
    return tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]


def ci_pytest_args() -> list[str]:
    """The arguments .ci/run gives pytest (one call, outside comments)."""
    calls = [
        shlex.split(line)
        for line in (REPO / ".ci" / "run").read_text().splitlines()
        if re.search(r"-m pytest\b", line) and not line.lstrip().startswith("#")
    ]
    assert len(calls) == 1, f".ci/run should call pytest once, found {len(calls)}"
    call = calls[0]
    return call[call.index("pytest") + 1 :]


def run_pytest(project: Path, *args: str) -> str:
    """pytest on the small project with the repository's settings; its summary line."""
    settings = pytest_options()
    project.joinpath("pyproject.toml").write_text(  # a JSON list of strings is valid TOML
        "[tool.pytest.ini_options]\n"
        f"addopts = {json.dumps(settings['addopts'])}\n"
        f"markers = {json.dumps(settings['markers'])}\n"
    )
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr


def test_pyproject_registers_slow_and_deselects_it_by_default():
    settings = pytest_options()
    assert any(m.split(":")[0] == "slow" for m in settings["markers"])
    assert "--strict-markers" in settings["addopts"]


def test_plain_pytest_runs_the_fast_test_only(tmp_path):
    (tmp_path / "test_two.py").write_text(TWO_TESTS)
    summary = run_pytest(tmp_path)
    assert re.search(r"\b1 passed\b", summary) and re.search(r"\b1 deselected\b", summary)


def test_ci_runs_both_tests(tmp_path):
    (tmp_path / "test_two.py").write_text(TWO_TESTS)
    summary = run_pytest(tmp_path, *ci_pytest_args())
    assert re.search(r"\b2 passed\b", summary) and "deselected" not in summary, summary


def test_a_misspelt_marker_is_an_error_not_a_fast_test(tmp_path):
    (tmp_path / "test_typo.py").write_text(
        "import pytest\n\n@pytest.mark.slwo\ndef test_long():\n    pass\n"
    )
    summary = run_pytest(tmp_path)
    assert "passed" not in summary and "error" in summary.lower(), summary
