"""report/views.py imports the model classes for its annotations only, so `catalog list`
(GPUs and lines: no model read) starts without numpy (issue #15 item 2)."""

from __future__ import annotations

import subprocess
import sys

PROBE = """
import runpy, sys
sys.argv = ["pdd-plan", "catalog", "list"]
try:
    runpy.run_module("pdd_plan", run_name="__main__")
except SystemExit:
    pass
print("NUMPY" if "numpy" in sys.modules else "NO-NUMPY", file=sys.stderr)
"""


def test_catalog_list_loads_no_numpy(tmp_path):
    done = subprocess.run([sys.executable, "-c", PROBE], cwd=tmp_path, capture_output=True,
                          text=True, timeout=60)  # fmt: skip
    assert "h100_sxm" in done.stdout  # the listing ran
    assert done.stderr.strip().splitlines()[-1] == "NO-NUMPY"
