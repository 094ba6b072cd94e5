"""Issue #25 point 2: the catalog's node configurations (`nodes/*.yaml`) and line-end
hardware (`line_ends.yaml`). Every GPU type a shipped scenario can pick has a node; every
figure names a source of sources.yaml and, where assumed, says why; a node disagreeing with
its GPU's `gpus_per_node`, or a second node for one GPU type, is refused (which would be
ordered?)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from pdd_plan.errors import InputError
from pdd_plan.loaders.catalog import Catalog

REPO = Path(__file__).resolve().parents[2]
CATALOG = REPO / "hardware_catalog"


def shipped_scenario_gpus() -> set[str]:
    """Every GPU id the shipped scenarios offer, read as plain YAML."""
    return {offer["gpu"] for path in (REPO / "scenarios").glob("*.yaml")
            for dc in yaml.safe_load(path.read_text())["datacenters"]
            for offer in dc["gpus"]}  # fmt: skip


def test_every_gpu_a_shipped_scenario_can_pick_has_a_node_configuration():
    nodes = Catalog(CATALOG).orders.nodes
    wanted = shipped_scenario_gpus()
    assert wanted >= {"h100_sxm", "h200_sxm", "h20_96g"}  # default, pdd-paper, template
    assert wanted <= set(nodes), wanted - set(nodes)


def test_every_node_figure_is_sourced_and_an_assumed_one_says_why():
    sources = yaml.safe_load((CATALOG / "sources.yaml").read_text())
    files = sorted((CATALOG / "nodes").glob("*.yaml"))
    assert files
    for path in files:
        data = yaml.safe_load(path.read_text())
        assert data["spec_source"] in sources, path
        for key, figure in data.items():
            if isinstance(figure, dict):
                assert figure["source"] in sources, (path, key)
                if figure.get("basis") in ("assumed", "derived") or figure["value"] is None:
                    assert figure.get("note"), (path, key)


def test_a_node_matches_its_gpus_per_node_as_the_gpu_file_says():
    for gpu_id, node in Catalog(CATALOG).orders.nodes.items():
        gpu_file = yaml.safe_load((CATALOG / "gpus" / f"{gpu_id}.yaml").read_text())
        assert node.gpus_per_node == gpu_file["gpus_per_node"]["value"], gpu_id


def test_every_line_tier_has_its_line_end_hardware():
    tiers = {t["id"] for t in yaml.safe_load((CATALOG / "lines.yaml").read_text())["tiers"]}
    assert set(Catalog(CATALOG).orders.line_ends) == tiers


@pytest.fixture
def copied(tmp_path) -> Path:
    root = tmp_path / "catalog"
    shutil.copytree(CATALOG, root)
    return root


def test_a_node_that_disagrees_with_its_gpu_is_refused(copied):
    path = copied / "nodes" / "dgx_h100.yaml"
    path.write_text(
        path.read_text().replace("gpus_per_node: {value: 8", "gpus_per_node: {value: 4")
    )
    with pytest.raises(InputError) as caught:
        Catalog(copied).orders.nodes  # noqa: B018 (read on first use)
    (problem,) = caught.value.problems
    assert (
        problem.key_path == "gpus_per_node" and "8, the catalog's gpus_per_node" in problem.line()
    )


def test_two_nodes_for_one_gpu_type_are_refused(copied):
    text = (copied / "nodes" / "dgx_h100.yaml").read_text().replace("id: dgx_h100", "id: other")
    (copied / "nodes" / "other.yaml").write_text(text)
    with pytest.raises(InputError) as caught:
        Catalog(copied).orders.nodes  # noqa: B018
    assert "one node configuration per GPU type" in str(caught.value)


def test_a_node_figure_without_a_source_is_refused(copied):
    path = copied / "nodes" / "dgx_b200.yaml"
    path.write_text(path.read_text().replace("max_power_kw: {value: 14.3, source: "
                                             "nvidia_dgx_b200_user_guide}",
                                             "max_power_kw: {value: 14.3}"))  # fmt: skip
    with pytest.raises(InputError) as caught:
        Catalog(copied).orders.nodes  # noqa: B018
    assert caught.value.problems[0].key_path == "max_power_kw.source"
