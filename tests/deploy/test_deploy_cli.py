"""`pdd-plan deploy` on the command line: the files, the stderr line of each mechanism the
target cannot express, one-line refusals (exit 2) of a bad plan, target or engine, and
outputs written whole and guarded like every other command's. Decoys live in tmp_path."""

from __future__ import annotations

import json
import os

import pytest
from conftest import PLANS, documents

from pdd_plan.cli.app import main
from pdd_plan.report.manifests import bundle as bundle_module
from pdd_plan.report.manifests.validate import ManifestInvalid

PDD = str(PLANS["pdd"])


def one_error(result, *fragments: str) -> str:
    assert "Traceback" not in result.stderr, result.stderr
    assert result.returncode == 2, (result.returncode, result.stderr)
    lines = [x for x in result.stderr.splitlines() if x.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])
    return lines[0]


@pytest.mark.slow
@pytest.mark.parametrize("target", ["dynamo", "llm-d", "k8s"])
def test_each_unexpressed_mechanism_is_one_stderr_line_and_a_comment_in_the_files(
    run_cli, tmp_path, target
):
    out = tmp_path / "out"
    done = run_cli("deploy", PDD, "--target", target, "-o", str(out), "--scenario", "pdd-paper")
    assert done.returncode == 0, done.stderr
    said = [x.removeprefix(f"not expressed by {target}: ") for x in done.stderr.splitlines()]
    assert len(said) >= 3 and all(said), done.stderr  # cross-datacenter, relay, handoff
    written = {p.relative_to(out).as_posix(): p.read_text() for p in out.rglob("*") if p.is_file()}
    readme = written.pop("README.txt")
    for text in said:
        assert f"] {text}" in readme
        assert any(f"#   - {text}\n" in t for t in written.values()), text
    assert sorted({name.split("/")[0] for name in written}) == ["dc_a", "dc_b"]
    for name in written:
        assert name in readme


@pytest.mark.slow
@pytest.mark.parametrize(
    "args, fragments",
    [
        (["missing-plan.yaml", "--target", "dynamo", "--scenario", "pdd-paper"],
         ("missing-plan.yaml",)),
        ([PDD, "--target", "dynamoo", "--scenario", "pdd-paper"],
         ("--target", "'dynamoo'", "one of dynamo, llm-d, k8s", "did you mean 'dynamo'")),
        ([PDD, "--target", "llm-d", "--engine", "sglang", "--scenario", "pdd-paper"],
         ("--engine", "'sglang'", "vllm for --target llm-d")),
        ([PDD, "--target", "k8s"], ("--scenario", "scenario.json beside")),
    ],
)  # fmt: skip
def test_a_bad_plan_target_or_engine_is_refused_in_one_line(run_cli, tmp_path, args, fragments):
    out = tmp_path / "out"
    one_error(run_cli("deploy", *args, "-o", str(out)), *fragments)
    assert not out.exists()


def _decoys(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n")
    link = tmp_path / "link-to-victim"
    link.symlink_to(victim)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "notes.txt").write_text("mine\n")
    return victim, {"a file": victim, "a link to a file": link, "a FIFO": fifo,
                    "a folder holding other files": busy}  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize("decoy", ["a file", "a link to a file", "a FIFO",
                                   "a folder holding other files"])  # fmt: skip
def test_an_output_that_is_not_a_new_folder_is_refused_and_left_alone(run_cli, tmp_path, decoy):
    victim, decoys = _decoys(tmp_path)
    path = decoys[decoy]
    one_error(run_cli("deploy", PDD, "-t", "k8s", "--scenario", "pdd-paper", "-o", str(path)),
              "--out")  # fmt: skip
    assert victim.read_text() == "keep me\n" and path.exists()
    assert (tmp_path / "busy" / "notes.txt").read_text() == "mine\n"
    assert sorted(p.name for p in (tmp_path / "busy").iterdir()) == ["notes.txt"]


@pytest.mark.slow
def test_an_out_folder_holding_the_plan_is_refused(run_cli, tmp_path):
    folder = tmp_path / "runs"
    folder.mkdir()
    plan = folder / "plan.yaml"
    plan.write_text(PLANS["pdd"].read_text())
    one_error(run_cli("deploy", str(plan), "-t", "dynamo", "--scenario", "pdd-paper", "-o",
                      str(folder)), "--out", "plan.yaml")  # fmt: skip
    assert sorted(p.name for p in folder.iterdir()) == ["plan.yaml"]


def test_nothing_is_written_when_a_later_file_fails_its_schema(tmp_path, monkeypatch):
    """Every file is checked before the first is written: a failure on the second leaves
    no folder at all (atomic)."""
    checked = []
    real = bundle_module.check

    def second_fails(path, doc, kind=None):
        checked.append(path)
        if len(checked) == 2:
            raise ManifestInvalid(f"{path}: planted")
        real(path, doc, kind)

    monkeypatch.setattr(bundle_module, "check", second_fails)
    out = tmp_path / "out"
    with pytest.raises(ManifestInvalid, match="planted"):
        main(["deploy", PDD, "-t", "dynamo", "--scenario", "pdd-paper", "-o", str(out)])
    assert not out.exists() and list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_a_solve_out_folder_deploys_without_naming_its_scenario(run_cli, tmp_path):
    """`solve --out` writes scenario.json beside plan.json; deploy reads it from there."""
    run = tmp_path / "run"
    solved = run_cli("solve", "--architecture", "cdc_pd", "--out", str(run))
    assert solved.returncode == 0, solved.stderr
    out = tmp_path / "deploy"
    done = run_cli("deploy", str(run / "plan.json"), "-t", "k8s", "-o", str(out))
    assert done.returncode == 0, done.stderr
    plan = json.loads((run / "plan.json").read_text())["plan"]
    want: dict[str, int] = {}
    for g in plan["instances"]:
        want[g["datacenter"]] = want.get(g["datacenter"], 0) + g["gpus_per_instance"] * g["count"]
    got: dict[str, int] = {}
    for path in out.glob("*/deployments.yaml"):
        for doc in documents(path.read_text()):
            if doc["kind"] == "Deployment":
                (c,) = doc["spec"]["template"]["spec"]["containers"]
                gpus = int(c["resources"]["limits"]["nvidia.com/gpu"])
                got[path.parent.name] = (
                    got.get(path.parent.name, 0) + doc["spec"]["replicas"] * gpus
                )
    assert got == want


def test_a_run_folder_takes_subfolders_and_never_a_name_outside_it(tmp_path):
    from pdd_plan.report.files import write_folder

    write_folder(tmp_path / "run", {"dc_a/x.yaml": "a\n", "README.txt": "r\n"})
    assert (tmp_path / "run" / "dc_a" / "x.yaml").read_text() == "a\n"
    for name in ("../escaped.txt", "/abs.txt"):
        with pytest.raises(ValueError, match="inside the folder"):
            write_folder(tmp_path / "other", {name: "x\n"})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]  # no temporary left behind
