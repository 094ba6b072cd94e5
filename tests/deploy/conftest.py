"""Shared by the deploy tests: the shipped PDD, CDC-PD and IDC-PD plans of the pdd-paper
scenario, and a schema check that reads the vendored files itself (not through the code
under test)."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
PLANS = {
    a: REPO / "scenarios" / "plans" / f"pdd-paper-{a}.yaml" for a in ("pdd", "cdc_pd", "idc_pd")
}
SCHEMAS = REPO / "pdd_plan" / "report" / "manifests" / "schemas"
TARGETS = ("dynamo", "llm-d", "k8s")
# GPUs per datacenter, by hand from the plan files (count x gpus_per_instance):
# pdd: dc_a 10 x 32 prefill + 1 x 24 relay = 344, dc_b 16 x 16 main decode = 256;
# cdc_pd: dc_a 10 x 32 = 320, dc_b 16 x 16 = 256; idc_pd: dc_a 10 x 32 + 16 x 24 = 704
PLAN_GPUS = {
    "pdd": {"dc_a": 344, "dc_b": 256},
    "cdc_pd": {"dc_a": 320, "dc_b": 256},
    "idc_pd": {"dc_a": 704},
}


def documents(text: str) -> list[dict]:
    return [d for d in yaml.safe_load_all(text) if d is not None]


def _schema(name: str) -> dict:
    return json.loads((SCHEMAS / name).read_text())


def schema_errors(name: str, doc: dict) -> list[str]:
    """The vendored schema's complaints about one document of file `name`."""
    from jsonschema import Draft7Validator, Draft202012Validator

    k8s = _schema("kubernetes-v1.33.0-strict.json")

    def k8s_errors(definition: str, instance) -> list:
        rooted = {"$ref": f"#/$defs/{definition}", "$defs": k8s["$defs"]}
        return list(Draft202012Validator(rooted).iter_errors(instance))

    if Path(name).name.startswith("llm-d-values-"):
        errors = Draft7Validator(_schema("llm-d-modelservice-v0.4.0-values.json")).iter_errors(doc)
        return [e.message for e in errors]
    kind = (doc.get("apiVersion"), doc.get("kind"))
    if kind == ("nvidia.com/v1alpha1", "DynamoGraphDeployment"):
        crd = Draft202012Validator(_schema("dynamo-dgd-v1alpha1-967e177c.json"))
        meta = k8s_errors("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta", doc["metadata"])
        return [e.message for e in [*crd.iter_errors(doc), *meta]]
    roots = {("apps/v1", "Deployment"): "io.k8s.api.apps.v1.Deployment",
             ("v1", "Service"): "io.k8s.api.core.v1.Service",
             ("v1", "ConfigMap"): "io.k8s.api.core.v1.ConfigMap"}  # fmt: skip
    assert kind in roots, f"{name}: no schema for {kind}"
    return [e.message for e in k8s_errors(roots[kind], doc)]
