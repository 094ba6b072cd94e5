"""Issue #22 item 10: outputs never replace a file the run reads, land where the kernel
would put them or nowhere, respect read-only marks even as root, never name one file
twice, and an interrupt says what was written.

Every fixture lives in `tmp_path` (decoys: copies of catalog files, hard links, links to
folders there); no test points the tool at a system path."""

from __future__ import annotations

import importlib.util
import os
import signal
import sys
from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.slow  # every test here is slow (pyproject.toml: markers)


def _shared():
    """tests/hardening/conftest.py's helpers (the tests are not a package)."""
    spec = importlib.util.spec_from_file_location(
        "hardening_shared_issue22", Path(__file__).with_name("conftest.py")
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks its module up there
    spec.loader.exec_module(module)
    return module


_h = _shared()
assert_one_error_line, changed, checksums = _h.assert_one_error_line, _h.changed, _h.checksums
REPO, TINY = _h.REPO, _h.TINY
CATALOG = REPO / "hardware_catalog"
BOM_HEADER = "# pdd-plan bill of materials,"


def tiny_with_files(folder: Path, model_file: str = "m.yaml", profile: str = "prof.yaml"):
    """The tiny scenario naming its model and its engine profile by file (copies of the
    shipped ones, in `folder`): inputs only the scenario names."""
    (folder / model_file).parent.mkdir(parents=True, exist_ok=True)
    (folder / model_file).write_text((CATALOG / "models" / "qwen3_32b.yaml").read_text())
    (folder / profile).parent.mkdir(parents=True, exist_ok=True)
    (folder / profile).write_text((CATALOG / "engines" / "roofline_default.yaml").read_text())
    data = {k: v for k, v in TINY.items() if k != "model"}
    data["model_file"] = model_file
    data["engine"] = {"profile": profile}
    path = folder / "s.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


# ---- a: inputs named inside a scenario, an option or a catalog overlay ---------------


@pytest.mark.parametrize(
    "option, target",
    [("--bom", "m.csv"), ("--report", "prof.md"), ("--dump-lp", "m.lp")],
)
def test_an_output_naming_a_file_the_scenario_reads_is_refused(cli, tmp_path, option, target):
    """The scenario's model and profile files named with the output's extension (any
    other is refused before the scenario loads: output_formats.py), so the refusal comes
    from the check of each file as the run opens it."""
    model, profile = ("m.yaml", target) if option == "--report" else (target, "prof.yaml")
    tiny_with_files(tmp_path, model, profile)
    before = checksums(tmp_path)
    done = cli("solve", "s.yaml", option, target)
    assert_one_error_line(done, 2, f"{target}:", option, "the same file as the input")
    assert done.stdout == ""  # refused as the scenario loads, before any solve
    assert changed(before, checksums(tmp_path)) == set()


def test_an_output_that_is_a_hard_link_of_the_model_file_is_refused(cli, tmp_path):
    tiny_with_files(tmp_path)
    os.link(tmp_path / "m.yaml", tmp_path / "other-name.csv")
    before = checksums(tmp_path)
    done = cli("solve", "s.yaml", "--bom", "other-name.csv")
    assert_one_error_line(done, 2, "other-name.csv:", "--bom", "input")
    assert changed(before, checksums(tmp_path)) == set()


def test_an_out_folder_holding_the_engine_profile_is_refused(cli, tmp_path):
    """The profile sits in an earlier run's folder under a run file's name, so the folder
    looks like one `--out` may replace; replacing it would lose the profile."""
    tiny_with_files(tmp_path, profile="run/run.json")
    before = checksums(tmp_path)
    done = cli("solve", "s.yaml", "--out", "run")
    assert_one_error_line(done, 2, "run:", "--out", "holding the input")
    assert changed(before, checksums(tmp_path)) == set()


def test_the_engine_profile_option_and_a_catalog_overlay_are_inputs(cli, tmp_path):
    tiny_with_files(tmp_path)
    (tmp_path / "p2.yaml").write_text((tmp_path / "prof.yaml").read_text())
    overlay = tmp_path / "overlay" / "gpus"
    overlay.mkdir(parents=True)
    entry = (CATALOG / "gpus" / "l40s.yaml").read_text().replace("id: l40s", "id: my_l40s")
    (overlay / "my_l40s.yaml").write_text(entry)  # a new id: no note about a replaced one
    row = '{{"timestamp": {}, "input_length": 1000, "output_length": 10, "hash_ids": [1, 2]}}\n'
    (tmp_path / "t.jsonl").write_text(row.format(0) + row.format(500))
    before = checksums(tmp_path)
    done = cli("solve", "s.yaml", "--engine-profile", "p2.yaml", "--bom", "p2.yaml")
    assert_one_error_line(done, 2, "p2.yaml:", "--bom", "input")
    # an overlay entry is YAML, which no `solve` output writes: a YAML output names it
    done = cli("--catalog-dir", "overlay", "trace", "analyze", "t.jsonl", "--workload-out",
               "overlay/gpus/my_l40s.yaml")  # fmt: skip
    assert_one_error_line(done, 2, "my_l40s.yaml", "--workload-out", "input")
    assert changed(before, checksums(tmp_path)) == set()


# ---- b, c: paths resolved as the kernel does -----------------------------------------


@pytest.mark.parametrize("option", ["--bom", "--out"])
def test_a_path_through_a_missing_folder_fails_as_the_kernel_would(cli, tmp_path, option):
    """`open("sub/../missing/../x.csv")` fails with ENOENT: `missing` is not there. A
    lexical `..` would write `x.csv` in the folder above instead."""
    work = tmp_path / "work"
    work.mkdir()
    tiny_with_files(work)
    before = checksums(tmp_path)
    done = cli("solve", "s.yaml", option, "../missing/../x.csv", cwd=work)
    assert_one_error_line(done, 2, "--", "does not exist", "missing")
    assert changed(before, checksums(tmp_path)) == set()


@pytest.mark.parametrize("path", ["new.csv/", "new.csv/.", "sub/.."])
def test_a_file_output_ending_in_a_folder_is_refused(cli, tmp_path, path):
    tiny_with_files(tmp_path)
    (tmp_path / "sub").mkdir()
    before = checksums(tmp_path)
    done = cli("solve", "s.yaml", "--bom", path)
    assert_one_error_line(done, 2, "--bom", "folder")
    assert changed(before, checksums(tmp_path)) == set()


# ---- d: read-only by the mode bits, root included --------------------------------------


def test_a_chmod_444_output_is_kept_even_as_root(cli, tmp_path):
    tiny_with_files(tmp_path)
    (tmp_path / "bom.csv").write_text("keep\n")
    (tmp_path / "bom.csv").chmod(0o444)
    done = cli("solve", "s.yaml", "--bom", "bom.csv")
    assert_one_error_line(done, 2, "bom.csv:", "read-only file", "0444")
    assert (tmp_path / "bom.csv").read_text() == "keep\n"


@pytest.mark.parametrize("option, path", [("--out", "locked"), ("--bom", "locked/bom.csv")])
def test_a_read_only_folder_is_refused_even_as_root(cli, tmp_path, option, path):
    tiny_with_files(tmp_path)
    locked = tmp_path / "locked"
    locked.mkdir()
    (locked / "bom.csv").write_text("from an earlier run\n")
    locked.chmod(0o555)
    try:
        before = checksums(tmp_path)
        done = cli("solve", "s.yaml", option, path)
        after = checksums(tmp_path)
    finally:
        locked.chmod(0o755)
    assert_one_error_line(done, 2, option, "read-only folder", "0555")
    assert changed(before, after) == set()


# ---- e: one file under two names -------------------------------------------------------


def test_two_outputs_that_are_hard_links_of_one_file_are_refused(cli, tmp_path):
    tiny_with_files(tmp_path)
    (tmp_path / "a.csv").write_text("old\n")
    os.link(tmp_path / "a.csv", tmp_path / "b.md")
    before = checksums(tmp_path)
    done = cli("solve", "s.yaml", "--bom", "a.csv", "--report", "b.md")
    assert_one_error_line(done, 2, "b.md:", "the same file as --bom")
    assert changed(before, checksums(tmp_path)) == set()


def test_an_output_inside_the_out_folder_under_another_name_is_refused(cli, tmp_path):
    tiny_with_files(tmp_path)
    (tmp_path / "run").mkdir()
    (tmp_path / "alias").symlink_to("run")
    before = checksums(tmp_path)
    done = cli("solve", "s.yaml", "--out", "run", "--bom", "alias/bom.csv")
    assert_one_error_line(done, 2, "run:", "--out", "alias/bom.csv")
    assert changed(before, checksums(tmp_path)) == set()


# ---- f: an interrupt after the outputs -------------------------------------------------


def _solve_interrupted(tmp_path, monkeypatch, capsys, stop_in: str, sig=signal.SIGTERM):
    """`solve` in this process, with a real signal sent to it from inside `stop_in` (a
    function of solve_cmd): (exit code, the stderr line)."""
    from pdd_plan.cli import app, solve_cmd

    def signal_self(*args, **kwargs):
        os.kill(os.getpid(), sig)

    monkeypatch.setattr(solve_cmd, stop_in, signal_self)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as stopped:
        app.main(["solve", "s.yaml", "--bom", "bom.csv", "--out", "run", "--no-progress"])
    lines = capsys.readouterr().err.strip().splitlines()
    errors = [line for line in lines if line.startswith("error: ")]
    assert len(errors) == 1, lines
    return stopped.value.code, errors[0]


def test_terminated_after_every_output_says_they_were_written(tmp_path, monkeypatch, capsys):
    """SIGTERM as the answer is printed, after both outputs were written whole."""
    tiny_with_files(tmp_path)
    code, err = _solve_interrupted(tmp_path, monkeypatch, capsys, "print_choice")
    assert code == 143
    assert err.startswith("error: terminated (SIGTERM)"), err
    assert "every output was written whole" in err, err
    assert "--bom bom.csv" in err and "--out run" in err, err
    assert (tmp_path / "bom.csv").read_text().startswith(BOM_HEADER)
    assert sorted(p.name for p in (tmp_path / "run").iterdir()) == sorted(
        ["plan.json", "bom.csv", "scenario.json", "run.json", "report.md"]
    )


def test_interrupted_between_outputs_names_each(tmp_path, monkeypatch, capsys):
    """Ctrl-C after the bill of materials, before the folder: which is there, which not."""
    tiny_with_files(tmp_path)
    code, err = _solve_interrupted(tmp_path, monkeypatch, capsys, "write_outputs", signal.SIGINT)
    assert code == 130
    assert "after writing --bom bom.csv whole; not written: --out run" in err, err
    assert (tmp_path / "bom.csv").read_text().startswith(BOM_HEADER)
    assert not (tmp_path / "run").exists()
