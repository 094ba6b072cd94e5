"""`pdd-plan schema scenario|plan [-o FILE]` (issue #25 item 4): a draft 2020-12 JSON Schema
named by the tool's version, on stdout or written whole through the guarded writer; a
kind it does not know, or an output it cannot write, is one line, exit 2, nothing written.
Every fixture lives in tmp_path (decoys included); no test points the tool at a system path.
"""

from __future__ import annotations

import json
import os

import jsonschema
import pytest

from pdd_plan.loaders.file_schemas import KINDS


def _one_error(done, *fragments: str) -> str:
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])
    return lines[0]


@pytest.mark.parametrize("kind", KINDS)
def test_each_schema_is_draft_2020_12_and_named_by_the_version(run_cli, kind):
    version = run_cli("--version").stdout.strip()  # what the tool says it is
    done = run_cli("schema", kind)
    assert done.returncode == 0, done.stderr
    schema = json.loads(done.stdout)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["$id"] == f"urn:pdd-plan:schema:{kind}:{version}"
    assert schema["x-pdd-plan-version"] == version


def test_o_writes_the_same_schema_to_the_file_and_dash_to_stdout(run_cli, tmp_path):
    printed = run_cli("schema", "plan").stdout
    done = run_cli("schema", "plan", "-o", "plan.schema.json")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "plan.schema.json").read_text() == printed
    assert "wrote plan.schema.json" in done.stdout
    dashed = run_cli("schema", "plan", "-o", "-")
    assert dashed.returncode == 0 and dashed.stdout == printed
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plan.schema.json"]


def test_a_link_is_followed_to_its_target_and_stays_a_link(run_cli, tmp_path):
    (tmp_path / "target.json").write_text("old\n")
    (tmp_path / "link.json").symlink_to("target.json")
    done = run_cli("schema", "scenario", "--output", "link.json")
    assert done.returncode == 0, done.stderr
    assert os.readlink(tmp_path / "link.json") == "target.json"
    assert json.loads((tmp_path / "target.json").read_text())["title"] == "pdd-plan scenario"


def test_an_unknown_kind_is_one_line_naming_the_kinds(run_cli, tmp_path):
    line = _one_error(run_cli("schema", "scenarios", "-o", "x.json"), "'scenarios'",
                      "one of scenario, plan", "did you mean 'scenario'")  # fmt: skip
    assert "KIND" in line
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("path", "says"),
    [("s.yaml", ".json"), ("folder", "a folder"), ("nowhere/s.json", "does not exist")],
)
def test_an_output_it_cannot_write_is_refused_and_nothing_is_written(run_cli, tmp_path, path,
                                                                     says):  # fmt: skip
    (tmp_path / "folder").mkdir()
    done = run_cli("schema", "scenario", "-o", path)
    _one_error(done, path, "--output", says)
    assert done.stdout == ""
    assert sorted(p.name for p in tmp_path.iterdir()) == ["folder"]
    assert list((tmp_path / "folder").iterdir()) == []
