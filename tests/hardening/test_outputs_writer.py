"""Output safety (issue #10, part A): the atomic writer itself, and the up-front checks of
output paths called directly. Every fixture lives in `tmp_path`; no test points the tool at
a system path."""

from __future__ import annotations

import importlib.util
import os
import stat
import sys
from pathlib import Path

import pytest

from pdd_plan.errors import InputError
from pdd_plan.report import files
from pdd_plan.report.files import write_atomic, write_folder


def _shared():
    """tests/hardening/conftest.py's helpers (the tests are not a package)."""
    spec = importlib.util.spec_from_file_location(
        "hardening_shared_outputs", Path(__file__).with_name("conftest.py")
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks its module up there
    spec.loader.exec_module(module)
    return module


_h = _shared()
checksums, earlier_run, read_fifo_in_thread = _h.checksums, _h.earlier_run, _h.read_fifo_in_thread


# ---- the writer itself ----------------------------------------------------------------


def test_writer_follows_a_symlink_chain_to_its_final_target(tmp_path):
    (tmp_path / "c.txt").write_text("old\n")
    (tmp_path / "b.txt").symlink_to("c.txt")
    (tmp_path / "a.txt").symlink_to("b.txt")
    write_atomic(tmp_path / "a.txt", "new\n")
    assert os.readlink(tmp_path / "a.txt") == "b.txt"
    assert os.readlink(tmp_path / "b.txt") == "c.txt"
    assert (tmp_path / "c.txt").read_text() == "new\n"


def test_writer_through_a_dangling_symlink_creates_its_target(tmp_path):
    (tmp_path / "link.txt").symlink_to("made.txt")
    write_atomic(tmp_path / "link.txt", b"bytes\n")
    assert (tmp_path / "link.txt").is_symlink()
    assert (tmp_path / "made.txt").read_bytes() == b"bytes\n"


def test_writer_into_a_missing_folder_is_one_input_error(tmp_path):
    (tmp_path / "link.txt").symlink_to("gone/made.txt")
    with pytest.raises(InputError) as caught:
        write_atomic(tmp_path / "link.txt", "x")
    assert len(caught.value.problems) == 1
    assert "No such file" in caught.value.problems[0].found
    with pytest.raises(InputError):
        write_atomic(tmp_path, "a folder is not a file")


def test_writer_writes_through_a_fifo(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    thread, got = read_fifo_in_thread(fifo)
    write_atomic(fifo, "through\n")
    thread.join(timeout=10)
    assert got == [b"through\n"]
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_writer_keeps_the_mode_of_the_file_it_replaces(tmp_path):
    path = tmp_path / "kept.txt"
    path.write_text("old\n")
    path.chmod(0o640)
    old = os.umask(0o077)
    try:
        write_atomic(path, "new\n")
        write_atomic(tmp_path / "fresh.txt", "new\n")
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    assert stat.S_IMODE((tmp_path / "fresh.txt").stat().st_mode) == 0o600


def test_an_interrupted_write_leaves_the_old_file_and_no_temporary(tmp_path, monkeypatch):
    path = tmp_path / "keep.txt"
    path.write_text("old\n")

    def interrupted(fd):
        raise KeyboardInterrupt

    monkeypatch.setattr(files.os, "fsync", interrupted)
    with pytest.raises(KeyboardInterrupt):
        write_atomic(path, "new, never whole\n")
    assert path.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["keep.txt"]


class _InterruptedContents(dict):
    """Contents whose second file is interrupted while the folder is being built."""

    def items(self):
        for i, item in enumerate(super().items()):
            if i == 1:
                raise KeyboardInterrupt
            yield item


def test_an_interrupted_folder_leaves_the_old_one_and_no_temporary(tmp_path):
    out = tmp_path / "out"
    earlier_run(out)
    before = checksums(tmp_path)
    with pytest.raises(KeyboardInterrupt):
        write_folder(out, _InterruptedContents({"plan.json": "new", "run.json": "new"}))
    assert checksums(tmp_path) == before
    assert [p.name for p in tmp_path.iterdir()] == ["out"]


def test_a_new_folder_respects_the_umask(tmp_path):
    old = os.umask(0o027)
    try:
        write_folder(tmp_path / "new", {"run.json": "{}\n"})
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "new").stat().st_mode) == 0o750
    assert stat.S_IMODE((tmp_path / "new" / "run.json").stat().st_mode) == 0o640


@pytest.mark.parametrize("exchange", [True, False], ids=["renameat2", "rename aside"])
def test_write_folder_swaps_in_exactly_the_new_contents(tmp_path, monkeypatch, exchange):
    if not exchange:
        monkeypatch.setattr(files, "_exchange", lambda a, b: False)
    out = tmp_path / "out"
    earlier_run(out)
    out.chmod(0o750)
    write_folder(out, {"plan.json": "new\n", "run.json": b"{}\n"})
    assert {p.name: p.read_text() for p in out.iterdir()} == {"plan.json": "new\n",
                                                              "run.json": "{}\n"}  # fmt: skip
    assert stat.S_IMODE(out.stat().st_mode) == 0o750
    assert [p.name for p in tmp_path.iterdir()] == ["out"]


# ---- the up-front checks, called directly -------------------------------------------------


def test_a_folder_that_refuses_a_new_file_is_refused(tmp_path, monkeypatch):
    """Root writes anywhere the mode bits say no, so a read-only mount or /proc shows only
    when a file is actually made: the probe's failure is the refusal."""
    from pdd_plan.cli import output_paths

    def read_only(path):
        raise OSError(30, "Read-only file system", str(path))

    monkeypatch.setattr(output_paths, "new_file", read_only)
    with pytest.raises(InputError) as caught:
        output_paths.check_outputs([], {"--bom": str(tmp_path / "b.csv")})
    (problem,) = caught.value.problems
    assert problem.key_path == "--bom" and "Read-only file system" in problem.found
    assert list(tmp_path.iterdir()) == []


def test_an_output_inside_the_out_folder_is_refused(tmp_path):
    from pdd_plan.cli.output_paths import check_outputs

    out = tmp_path / "out"
    out.mkdir()
    with pytest.raises(InputError) as caught:
        check_outputs([], {"--bom": str(out / "b.csv")}, {"--out": str(out)})
    assert "--bom" in caught.value.problems[0].found
    check_outputs([], {"--bom": str(tmp_path / "b.csv")}, {"--out": str(out)})  # beside: fine


def test_a_solve_out_folder_can_be_replaced_by_the_next_run(tmp_path):
    """What `solve --out` writes is a folder the next run may replace (its every name is
    one the check knows), so reruns into one folder work."""
    from types import SimpleNamespace

    from pdd_plan.cli.output_paths import check_outputs
    from pdd_plan.cli.solve_cmd import write_outputs

    result = {"status": "optimal", "solver": {"name": "highs", "objective": "max_bcr",
                                              "wall_s": 1.0}}  # fmt: skip
    files_made = SimpleNamespace(bom_csv="a,b\n", resolved_scenario={"name": "x"})
    write_outputs(tmp_path / "out", result, files_made, "# report\n")
    assert {p.name for p in (tmp_path / "out").iterdir()} == {
        "plan.json", "bom.csv", "scenario.json", "run.json", "report.md"}  # fmt: skip
    check_outputs([], folders={"--out": str(tmp_path / "out")})  # no refusal
