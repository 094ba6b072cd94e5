"""Every document checked against its target's vendored schema before it is written.

The schemas (schemas/, their origins in schemas/SOURCES.md) are read from the package, so
no check needs the network. A document that fails is a fault of the generator, not of
the user's input: `ManifestInvalid` (exit 1 with its traceback), naming the file, the
key path, and what the schema said."""

from __future__ import annotations

import json
from functools import cache
from importlib import resources

from pdd_plan.report.manifests.versions import K8S_SCHEMA

DYNAMO_SCHEMA = "dynamo-dgd-v1alpha1-967e177c.json"
LLMD_SCHEMA = "llm-d-modelservice-v0.4.0-values.json"
# (apiVersion, kind) -> the definition of the Kubernetes bundle it is checked against
K8S_KINDS = {
    ("apps/v1", "Deployment"): "io.k8s.api.apps.v1.Deployment",
    ("v1", "Service"): "io.k8s.api.core.v1.Service",
    ("v1", "ConfigMap"): "io.k8s.api.core.v1.ConfigMap",
}
OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
LLMD_VALUES = "llm-d-modelservice values"  # the kind given to a Helm values document


class ManifestInvalid(Exception):
    """A written document does not validate: a bug of the generator."""


@cache
def schema_file(name: str) -> dict:
    text = resources.files("pdd_plan.report.manifests").joinpath("schemas", name).read_text()
    return json.loads(text)


@cache
def _validator(name: str, definition: str | None):
    from jsonschema import Draft7Validator, Draft202012Validator  # only for `deploy`

    schema = schema_file(name)
    if definition is None:
        return (
            Draft7Validator(schema)
            if "draft-07" in schema["$schema"]
            else (Draft202012Validator(schema))
        )
    rooted = {"$ref": f"#/$defs/{definition}", "$defs": schema["$defs"]}
    return Draft202012Validator(rooted)


def validators_for(doc: dict, kind: str | None = None) -> list:
    """The validators one document must pass: by its apiVersion and kind, or `kind`."""
    if kind == LLMD_VALUES:
        return [_validator(LLMD_SCHEMA, None)]
    key = (doc.get("apiVersion"), doc.get("kind"))
    if key in K8S_KINDS:
        return [_validator(K8S_SCHEMA, K8S_KINDS[key])]
    if key == ("nvidia.com/v1alpha1", "DynamoGraphDeployment"):
        return [_validator(DYNAMO_SCHEMA, None), _MetadataValidator()]
    raise ManifestInvalid(f"no vendored schema for {key}")


class _MetadataValidator:
    """A custom resource's metadata is Kubernetes' ObjectMeta (the CRD says only `object`)."""

    def iter_errors(self, doc: dict):
        for error in _validator(K8S_SCHEMA, OBJECT_META).iter_errors(doc.get("metadata", {})):
            error.path.appendleft("metadata")  # the path from the document's top
            yield error


def check(path: str, doc: dict, kind: str | None = None) -> None:
    """Raise ManifestInvalid on the first schema error of `doc` (written as `path`)."""
    for validator in validators_for(doc, kind):
        for error in validator.iter_errors(doc):
            where = ".".join(str(p) for p in error.absolute_path) or "(top)"
            raise ManifestInvalid(f"{path}: {where}: {error.message}")
