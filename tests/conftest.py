"""Shared fixtures: the catalog, the CLI runner, and ../shared (skipped when absent)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from pdd_plan.loaders.catalog import Catalog

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"


@pytest.fixture(scope="session")
def catalog() -> Catalog:
    return Catalog()


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """The team's ../shared folder; tests that need it skip cleanly without it."""
    if not (SHARED / "data").is_dir():
        pytest.skip("../shared/data is not present")
    return SHARED


def cli_command() -> list[str]:
    exe = Path(sys.executable).with_name("pdd-plan")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "pdd_plan"]


@pytest.fixture
def run_cli(tmp_path):
    """Run the installed CLI from a temporary directory (never the repository)."""

    def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
        env = {k: v for k, v in os.environ.items() if k != "PDD_PLAN_DEBUG"}
        env["COLUMNS"] = "200"
        return subprocess.run(
            [*cli_command(), *args],
            cwd=cwd or tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )

    return run
