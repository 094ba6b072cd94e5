"""`main` run in-process: the same error-to-exit-code mapping as the installed command,
without a Python start-up per case (a subprocess costs ~2 s on the shared cores)."""

from __future__ import annotations

import os
from dataclasses import dataclass

import pytest

from pdd_plan.cli.app import main


@dataclass
class Run:
    returncode: int
    stdout: str
    stderr: str


@pytest.fixture
def run_main(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PDD_PLAN_DEBUG", raising=False)
    monkeypatch.setenv("COLUMNS", "200")

    def run(*args: str) -> Run:
        capsys.readouterr()
        try:
            main(list(args))
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        out = capsys.readouterr()
        return Run(code, out.out, out.err)

    assert os.getcwd() == str(tmp_path)
    return run
