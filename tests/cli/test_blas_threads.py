"""The CLI runs numpy's BLAS on one thread unless the user set OPENBLAS_NUM_THREADS
(cli/app.py): the value must be in the environment before numpy is imported, since
OpenBLAS reads it once when it loads. Checked in fresh interpreters, through what numpy
itself reports is loaded, so a move of the setting below a numpy import fails here."""

from __future__ import annotations

import os
import subprocess
import sys

PROBE = (
    "import os, sys\n"
    "import pdd_plan.cli.app\n"
    "assert 'numpy' not in sys.modules, 'the CLI entry imported numpy before its setting'\n"
    "print(os.environ.get('OPENBLAS_NUM_THREADS'))\n"
)


def _run(env_value: str | None) -> str:
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    if env_value is not None:
        env["OPENBLAS_NUM_THREADS"] = env_value
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True,
                          env=env, check=True)  # fmt: skip
    return done.stdout.strip()


def test_one_blas_thread_by_default():
    assert _run(None) == "1"


def test_the_users_setting_is_kept():
    assert _run("3") == "3"
