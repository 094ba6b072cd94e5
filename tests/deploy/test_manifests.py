"""`deploy`'s files for the shipped PDD, CDC-PD and IDC-PD plans (issue #25 point 3):
every document validates against its target's vendored schema, the GPUs they request add
up to the plan's in each datacenter, and what a target cannot express is said in the
files of the datacenters it concerns."""

from __future__ import annotations

from functools import cache

import pytest
from conftest import PLAN_GPUS, PLANS, TARGETS, documents, schema_errors

from pdd_plan.model.deployment import InstanceGroup
from pdd_plan.report.manifests.engine_args import sglang_args, vllm_args
from pdd_plan.report.manifests.shapes import GroupShape, pod_split
from pdd_plan.report.manifests.validate import ManifestInvalid, check
from pdd_plan.stages.deploying.deploy_service import deploy_files

CASES = [(t, a) for t in TARGETS for a in PLANS]


@cache
def bundle(target: str, architecture: str):
    return deploy_files(PLANS[architecture], target, scenario="pdd-paper")


def manifests(target: str, architecture: str) -> dict[str, list[dict]]:
    files = bundle(target, architecture).files
    return {name: documents(text) for name, text in files.items() if name != "README.txt"}


@pytest.mark.parametrize("target, architecture", CASES)
def test_every_written_document_validates_against_the_vendored_schema(target, architecture):
    written = manifests(target, architecture)
    assert written, "no files"
    for name, docs in written.items():
        assert docs, name
        for doc in docs:
            assert schema_errors(name, doc) == [], name


def _dynamo_gpus(doc: dict) -> int:
    """The operator's count: replicas x GPU limit x nodes (its CRD: "Total number of GPUs
    is NumberOfNodes * GPU limit")."""
    total = 0
    for service in doc["spec"]["services"].values():
        if service["componentType"] != "worker":
            continue
        nodes = service.get("multinode", {}).get("nodeCount", 1)
        total += service["replicas"] * int(service["resources"]["limits"]["gpu"]) * nodes
    return total


def _llmd_gpus(doc: dict) -> int:
    """replicas x pods per replica (workers) x the container's GPU limit; the chart's own
    count of a pod's GPUs (tensor x dataLocal) must agree with the limit."""
    total = 0
    for role in ("prefill", "decode"):
        pool = doc[role]
        if not pool.get("create"):
            continue
        (per_pod,) = (int(v) for v in pool["containers"][0]["resources"]["limits"].values())
        p = pool["parallelism"]
        assert p["tensor"] * p["dataLocal"] == per_pod
        total += pool["replicas"] * p["workers"] * per_pod
    return total


def _k8s_gpus(doc: dict) -> int:
    if doc["kind"] != "Deployment":
        return 0
    (container,) = doc["spec"]["template"]["spec"]["containers"]
    return doc["spec"]["replicas"] * sum(int(v) for v in container["resources"]["limits"].values())


COUNT = {"dynamo": _dynamo_gpus, "llm-d": _llmd_gpus, "k8s": _k8s_gpus}


@pytest.mark.parametrize("target, architecture", CASES)
def test_the_gpus_requested_in_each_datacenter_are_the_plans(target, architecture):
    per_dc: dict[str, int] = {}
    for name, docs in manifests(target, architecture).items():
        dc = name.split("/")[0]
        per_dc[dc] = per_dc.get(dc, 0) + sum(
            COUNT[target](d) for d in docs if d.get("kind") != "ConfigMap"
        )
    assert per_dc == PLAN_GPUS[architecture]


@pytest.mark.parametrize("target", TARGETS)
def test_a_pdd_plan_says_in_its_files_what_the_target_cannot_express(target):
    b = bundle(target, "pdd")
    texts = [g.text for g in b.gaps]
    assert any(t.startswith("relay decode:") for t in texts)
    assert any("handoff RLD -> MD" in t for t in texts)
    assert any(t.startswith("cross-datacenter KV transfer") for t in texts)
    for gap in b.gaps:
        for name, text in b.files.items():
            if name.split("/")[0] in gap.datacenters:
                assert f"#   - {gap.text}\n" in text, (name, gap.text)
        assert gap.text in b.files["README.txt"]


def test_an_idc_pd_plan_on_dynamo_leaves_nothing_unexpressed():
    b = bundle("dynamo", "idc_pd")
    assert b.gaps == []
    assert not any("Not expressed" in text for text in b.files.values())


def test_every_file_states_its_pinned_versions():
    for target in TARGETS:
        for name, text in bundle(target, "cdc_pd").files.items():
            second = text.splitlines()[1]
            assert second.startswith("Versions: " if name == "README.txt" else "# Versions: ")
    for docs in manifests("dynamo", "cdc_pd").values():
        for doc in docs:
            assert doc["metadata"]["labels"]["pdd-plan/target-version"].endswith("967e177c")


ONE_NODE = {"nodeCount": 1}  # the CRD: minimum 2
DGD = {
    "apiVersion": "nvidia.com/v1alpha1",
    "kind": "DynamoGraphDeployment",
    "metadata": {"name": "x"},
}


@pytest.mark.parametrize(
    "name, doc",
    [
        ("dc/dynamo-graph.yaml", {**DGD, "spec": {"services": {"w": {"replica": 1}}}}),
        ("dc/dynamo-graph.yaml", {**DGD, "spec": {"services": {"w": {"multinode": ONE_NODE}}}}),
        ("dc/llm-d-values-x.yaml", {"modelArtifact": {"name": "m"}}),
        ("dc/deployments.yaml", {"apiVersion": "apps/v1", "kind": "Deployment",
                                 "metadata": {"name": "x"}, "spec": {"replicas": "ten"}}),
    ],
)  # fmt: skip
def test_the_vendored_schemas_refuse_a_misspelt_key_or_a_wrong_type(name, doc):
    assert schema_errors(name, doc)
    kind = "llm-d-modelservice values" if "llm-d" in name else None
    with pytest.raises(ManifestInvalid, match=name):
        check(name, doc, kind)


def _shape(role: str, gpus: int, mode: str, per_node: int = 8, batch=None, tokens=None):
    nodes, per_pod = pod_split(gpus, per_node)
    group = InstanceGroup(role, "dc_a", "h100_sxm", gpus, 2)
    return GroupShape(group, "nvidia", mode, nodes, per_pod, batch, tokens)


@pytest.mark.parametrize(
    "gpus, per_node, expected", [(24, 8, (3, 8)), (12, 8, (2, 6)), (4, 8, (1, 4)), (9, 8, (3, 3))]
)
def test_an_instance_splits_into_whole_pods_of_at_most_one_node(gpus, per_node, expected):
    pods, per_pod = pod_split(gpus, per_node)
    assert (pods, per_pod) == expected and pods * per_pod == gpus and per_pod <= per_node


def test_vllm_flags_carry_the_shape_and_the_batch_limits_per_rank():
    tp = vllm_args(_shape("decode", 4, "tp", batch=100), "bf16", disaggregated=True)
    assert tp[tp.index("--tensor-parallel-size") + 1] == "4"
    assert tp[tp.index("--max-num-seqs") + 1] == "100"  # one rank: the instance's batch
    assert "--kv-transfer-config" in tp and "--enable-prefix-caching" in tp
    assert "--kv-cache-dtype" not in tp  # bf16: the engine's default
    ep = vllm_args(_shape("prefill", 16, "ep", tokens=16 * 1024), "fp8", disaggregated=True)
    assert ep[ep.index("--data-parallel-size") + 1] == "16"
    assert ep[ep.index("--data-parallel-size-local") + 1] == "8"  # two 8-GPU pods
    assert ep[ep.index("--max-num-batched-tokens") + 1] == "1024"  # 16 Ki tokens over 16 ranks
    assert "--enable-expert-parallel" in ep and ep[ep.index("--kv-cache-dtype") + 1] == "fp8"
    colocated = vllm_args(_shape("colocated", 8, "tp", batch=64, tokens=8192), "bf16", False)
    assert "--kv-transfer-config" not in colocated


def test_sglang_flags_name_the_disaggregation_role_and_the_instance_figures():
    args = sglang_args(_shape("prefill", 16, "ep", tokens=32768), "fp8", disaggregated=True)
    assert args[args.index("--disaggregation-mode") + 1] == "prefill"
    assert args[args.index("--dp-size") + 1] == "16" and "--enable-dp-attention" in args
    assert args[args.index("--chunked-prefill-size") + 1] == "32768"
    assert args[args.index("--nnodes") + 1] == "2"
    decode = sglang_args(_shape("main_decode", 8, "tp", batch=300), "bf16", disaggregated=True)
    assert decode[decode.index("--disaggregation-mode") + 1] == "decode"
    assert decode[decode.index("--max-running-requests") + 1] == "300"


def test_a_colocated_plan_runs_aggregated_workers_without_kv_transfer(tmp_path):
    plan = tmp_path / "colocated.yaml"
    plan.write_text(
        "plan:\n  architecture: colocated\n  instances:\n"
        "    - {role: colocated, datacenter: dc_a, gpu: h100_sxm,\n"
        "       gpus_per_instance: 32, count: 2}\n"
    )
    b = deploy_files(plan, "dynamo", scenario="pdd-paper")
    (graph,) = documents(b.files["dc_a/dynamo-graph.yaml"])
    assert schema_errors("dc_a/dynamo-graph.yaml", graph) == []
    worker = graph["spec"]["services"]["colocated-h100-sxm-32g"]
    assert "subComponentType" not in worker  # aggregated: no prefill/decode sub-role
    assert "--kv-transfer-config" not in worker["extraPodSpec"]["mainContainer"]["args"]
    assert (
        worker["replicas"]
        * int(worker["resources"]["limits"]["gpu"])
        * (worker["multinode"]["nodeCount"])
        == 2 * 32
    )
    assert b.gaps == []
