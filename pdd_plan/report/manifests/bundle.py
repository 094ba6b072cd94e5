"""All files of one `deploy`: per datacenter the target's manifests and the router's
policy, each with a header (who wrote it, the pinned versions, what it runs, what the
target cannot express) and each document validated; README.txt lists them."""

from __future__ import annotations

from dataclasses import dataclass

import yaml

from pdd_plan import __version__
from pdd_plan.model.deployment import Deployment
from pdd_plan.report.manifests import dynamo, k8s, llmd
from pdd_plan.report.manifests.common import ENTRY_ROLES, Settings, group_name
from pdd_plan.report.manifests.gaps import Gap, plan_gaps
from pdd_plan.report.manifests.router_policy import config_map, policy_data
from pdd_plan.report.manifests.shapes import GroupShape
from pdd_plan.report.manifests.validate import LLMD_VALUES, check
from pdd_plan.report.manifests.versions import versions_text


@dataclass(frozen=True)
class Bundle:
    files: dict[str, str]  # relative path -> text
    gaps: list[Gap]


@dataclass(frozen=True)
class _File:
    name: str
    docs: list[dict]
    runs: str  # what README.txt says it runs
    kind: str | None = None  # the schema to check against when not apiVersion/kind


class _Dumper(yaml.SafeDumper):
    """Plain YAML for people and kubectl: no anchors for repeated values, and text of
    several lines (the router's policy) as a literal block."""

    def ignore_aliases(self, data) -> bool:
        return True


def _text(dumper: yaml.SafeDumper, value: str):
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _text)


def _dump(doc: dict) -> str:
    return yaml.dump(
        doc, Dumper=_Dumper, sort_keys=False, default_flow_style=False, width=1_000_000
    )


def _runs(shape: GroupShape) -> str:
    return (
        f"{shape.role}: {shape.group.count} x {shape.gpus} {shape.group.gpu} GPUs "
        f"({shape.shape_text()})"
    )


def _target_files(settings: Settings, dc: str, shapes: list[GroupShape]) -> list[_File]:
    target = settings.target.name
    if target == "dynamo":
        runs = "; ".join(_runs(s) for s in shapes)
        return [_File(f"{dc}/dynamo-graph.yaml", [dynamo.graph(settings, dc, shapes)], runs)]
    if target == "llm-d":
        return [
            _File(
                f"{dc}/llm-d-values-{group_name(s)}.yaml",
                [llmd.values(settings, s)],
                _runs(s),
                LLMD_VALUES,
            )
            for s in shapes
        ]
    docs = [doc for s in shapes for doc in (k8s.deployment(settings, s), k8s.service(settings, s))]
    return [_File(f"{dc}/deployments.yaml", docs, "; ".join(_runs(s) for s in shapes))]


def _header(settings: Settings, dc: str, file: _File, gaps: list[Gap], source: str) -> str:
    lines = [
        f"Written by pdd-plan {__version__} (`deploy --target {settings.target.name}`) from "
        f"{source}: {settings.architecture} plan, datacenter {dc}.",
        f"Versions: {versions_text(settings.target, settings.image)}.",
        f"Runs: {file.runs}.",
    ]
    mine = [g.text for g in gaps if dc in g.datacenters]
    if mine:
        lines.append("Not expressed by this target (also printed on stderr):")
        lines += [f"  - {text}" for text in mine]
    return "".join(f"# {line}\n" for line in lines)


def build(
    settings: Settings, d: Deployment, scenario, shapes: list[GroupShape], source: str
) -> Bundle:
    """Every file, validated; `source` names the plan in the headers."""
    gaps = plan_gaps(settings.target.name, settings.engine, d, shapes)
    policy_yaml = _dump(policy_data(d, scenario, shapes))
    files, listing = {}, []
    for dc in dict.fromkeys(s.datacenter for s in shapes):
        mine = [s for s in shapes if s.datacenter == dc]
        wanted = _target_files(settings, dc, mine)
        if any(s.role in ENTRY_ROLES for s in mine):
            wanted.append(
                _File(
                    f"{dc}/router-policy.yaml",
                    [config_map(settings, dc, policy_yaml)],
                    "the router's policy (ConfigMap pdd-plan-router-policy)",
                )
            )
        for file in wanted:
            for doc in file.docs:
                check(file.name, doc, file.kind)
            body = "---\n".join(_dump(doc) for doc in file.docs)
            files[file.name] = _header(settings, dc, file, gaps, source) + body
            listing.append(f"{file.name}: {file.runs}")
    files["README.txt"] = _readme(settings, listing, gaps)
    return Bundle(files, gaps)


def _readme(settings: Settings, listing: list[str], gaps: list[Gap]) -> str:
    lines = [
        f"pdd-plan {__version__} deploy --target {settings.target.name}: "
        f"{settings.architecture} plan, one folder per datacenter.",
        f"Versions: {versions_text(settings.target, settings.image)}.",
        "",
        "Files:",
        *(f"  {entry}" for entry in listing),
    ]
    if gaps:
        lines += [
            "",
            "Not expressed by this target:",
            *(f"  - [{', '.join(g.datacenters)}] {g.text}" for g in gaps),
        ]
    return "\n".join(lines) + "\n"
