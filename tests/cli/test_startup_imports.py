"""What each command's process imports (#15 Build 2): `--help`, `version` and `catalog list`
load neither scipy, PuLP, the optimiser, the simulator nor pydantic; `evaluate` loads the
models and scipy it computes with, but not PuLP, the MILP or pydantic.

The expectations are the issue's (the listing and help start without the optimiser or
scipy) and the CLI's own argument types (plain strings, numbers and `--format`, which need
no pydantic: cli/fast_params.py), checked on `sys.modules` of a fresh interpreter.
"""

from __future__ import annotations

import json
import subprocess
import sys

from test_startup_lazy import _probe

OPTIMISER = ("pulp", "pdd_plan.plan.solve", "pdd_plan.plan.formulate", "pdd_plan.plan.search")
NEVER_FOR_A_LISTING = ("scipy", "pydantic", "pdd_plan.sim", *OPTIMISER)

# the default scenario's architecture without relay decode: one prefill instance of 24 H100s
# and one main-decode instance of 16 H20s (its HBM holds the weights and a batch of the
# default's 38,709-token contexts; 8 do not) over one 10 Gbit/s line
PLAN = {
    "plan": {
        "architecture": "cdc_pd",
        "instances": [
            {"role": "prefill", "datacenter": "dc_a", "gpu": "h100_sxm",
             "gpus_per_instance": 24, "count": 1},
            {"role": "main_decode", "datacenter": "dc_b", "gpu": "h20_96g",
             "gpus_per_instance": 16, "count": 1},
        ],
        "lines": [{"tier": "wave_10g", "capacity_gbit_per_s": 10.0, "count": 1}],
    }
}  # fmt: skip


def _loaded_of(families, *args: list[str]) -> list[str]:
    """The modules of `families` loaded after running each command line of `args` in one
    fresh interpreter (test_startup_lazy's probe)."""
    return _probe(*args, heavy=families)[1]["heavy"]


def _heavy(loaded: list[str], families) -> list[str]:
    return [m for m in loaded if any(m == f or m.startswith(f + ".") for f in families)]


def test_help_version_and_the_catalog_listing_load_no_scipy_optimiser_or_pydantic():
    every = (["--help"], ["version"], ["catalog", "list"], ["catalog", "list", "--format",
             "json"], ["evaluate", "--help"], ["solve", "--help"])  # fmt: skip
    assert _loaded_of(NEVER_FOR_A_LISTING, *every) == []


def test_evaluate_loads_the_models_but_not_the_optimiser_or_pydantic(tmp_path):
    plan = tmp_path / "plan.yaml"
    plan.write_text(json.dumps(PLAN))  # JSON is YAML
    never = (*OPTIMISER, "pydantic", "pdd_plan.sim")
    loaded = _loaded_of(("pdd_plan.model.evaluate", *never), ["evaluate", "default", str(plan),
                        "--format", "json"])  # fmt: skip
    assert "pdd_plan.model.evaluate" in loaded  # it did evaluate
    assert _heavy(loaded, never) == []


def test_the_catalogs_gpus_and_lines_load_without_the_model_classes_or_numpy():
    """GPUs, line tiers and cache tiers are plain records (model/compute/hardware.py,
    model/caches/cache_tier.py): reading them needs neither the LLM model classes nor numpy,
    which load with the first model asked for."""
    code = """
import json, sys
from pdd_plan.loaders.catalog import Catalog
catalog = Catalog()
assert catalog.gpus and catalog.lines
catalog.cache_tiers
before = sorted(sys.modules)
catalog.model(catalog.model_ids()[0])
print("LOADED=" + json.dumps([before, sorted(sys.modules)]))
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, env={"PATH": "/usr/bin:/bin"})  # fmt: skip
    lines = [x for x in done.stdout.splitlines() if x.startswith("LOADED=")]
    assert done.returncode == 0 and lines, done.stderr[-2000:]
    before, after = json.loads(lines[-1][len("LOADED=") :])
    assert _heavy(before, ("numpy", "pdd_plan.model.compute.llm", "pdd_plan.model.scenario")) == []
    assert "pdd_plan.model.compute.llm" in after  # a model still loads, classes and all
