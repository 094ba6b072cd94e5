"""explain relaxes a binding availability whatever the datacenter's id: the MILP's names
shorten an id over 20 characters (plan/lp_names.py) and explain reads them the same way,
so a 40-character id keeps its 'one more GPU' relaxation (issue #22, point 9)."""

from __future__ import annotations

import pytest

from pdd_plan.loaders.scenario import load_scenario, resolve_scenario_path
from tests.unit import test_explain as te

pytestmark = pytest.mark.slow  # every test here is slow (pyproject.toml: markers)

LONG_ID = "datacenter_in_the_north_with_a_long_name"  # 40 characters


def test_a_long_datacenter_id_keeps_its_availability_relaxation(catalog, tmp_path):
    text = resolve_scenario_path("default").read_text().replace(*te.FIXED_POLICY)
    for old, new in te.VARIANTS["availability"]:  # test_explain's binding availability
        text = text.replace(old, new)
    text = text.replace("dc_a", LONG_ID)
    path = tmp_path / "long.yaml"
    path.write_text(text)
    out = te.run(catalog, load_scenario(path, catalog))
    offered = [r["relaxation"] for r in out["relaxations"]]
    assert f"one more h200_sxm in {LONG_ID}" in offered
