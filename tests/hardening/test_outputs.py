"""Output safety (issue #10, part A): every output path is checked before any work, writes
follow symbolic links to their target, go straight through FIFOs and `-`, respect the
umask, and never leave a half-written file or an `--out` folder mixing two runs.

Every fixture lives in `tmp_path`; no test points the tool at a system path."""

from __future__ import annotations

import importlib.util
import json
import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml


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
assert_no_traceback, assert_one_error_line = _h.assert_no_traceback, _h.assert_one_error_line
changed, checksums, interrupt_after = _h.changed, _h.checksums, _h.interrupt_after
cli_command, cli_env, REPO = _h.cli_command, _h.cli_env, _h.REPO
earlier_run, read_fifo_in_thread = _h.earlier_run, _h.read_fifo_in_thread

BOM_HEADER = "# pdd-plan bill of materials,"  # the first row of the bill of materials


def small_config(folder: Path) -> Path:
    """A two-layer Llama-style config.json: `model import` of it takes well under a second."""
    config = folder / "cfg.json"
    config.write_text(
        json.dumps(
            {
                "architectures": ["LlamaForCausalLM"],
                "model_type": "llama",
                "hidden_size": 256,
                "intermediate_size": 512,
                "num_attention_heads": 4,
                "num_key_value_heads": 2,
                "num_hidden_layers": 2,
                "vocab_size": 1000,
                "max_position_embeddings": 4096,
                "torch_dtype": "bfloat16",
            }
        )
    )
    return config


def tiny_trace(folder: Path) -> Path:
    rows = [
        {"timestamp": 0, "input_length": 1000, "output_length": 10, "hash_ids": [1, 2]},
        {"timestamp": 500, "input_length": 1000, "output_length": 20, "hash_ids": [1, 3]},
        {"timestamp": 1500, "input_length": 600, "output_length": 5, "hash_ids": [4, 5]},
    ]
    trace = folder / "t.jsonl"
    trace.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return trace


def default_scenario(folder: Path) -> Path:
    """A copy of the default scenario in the test's folder: a real input, which a late
    check would let the solve overwrite."""
    path = folder / "s.yaml"
    path.write_text((REPO / "scenarios" / "default.yaml").read_text())
    return path


def run_with_umask(args: list[str], cwd: Path, umask: int) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*cli_command(), *args],
        cwd=cwd,
        env=cli_env(),
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
        preexec_fn=lambda: os.umask(umask),
    )


# ---- through the real CLI -------------------------------------------------------------


@pytest.mark.slow
def test_bom_through_a_symlink_writes_its_target_and_keeps_the_link(cli, tmp_path):
    (tmp_path / "target.csv").write_text("old\n")
    (tmp_path / "link.csv").symlink_to("target.csv")
    before = checksums(tmp_path)
    done = cli("solve", "--bom", "link.csv", "--time-limit", "5")
    assert done.returncode == 0, done.stderr
    assert_no_traceback(done)
    assert (tmp_path / "link.csv").is_symlink()
    assert os.readlink(tmp_path / "link.csv") == "target.csv"
    assert (tmp_path / "target.csv").read_text().startswith(BOM_HEADER)
    assert changed(before, checksums(tmp_path)) == {"target.csv"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.csv", "target.csv"]


def test_a_fifo_output_is_written_through_and_stays_a_fifo(cli, tmp_path):
    config = small_config(tmp_path)
    fifo = tmp_path / "pipe.yaml"
    os.mkfifo(fifo)
    thread, got = read_fifo_in_thread(fifo)
    done = cli("model", "import", config, "--id", "tiny_llama", "-o", fifo, timeout=60)
    thread.join(timeout=30)
    assert done.returncode == 0, done.stderr
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert yaml.safe_load(got[0])["id"] == "tiny_llama"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cfg.json", "pipe.yaml"]


def test_dash_writes_to_stdout_and_creates_no_file(cli, tmp_path):
    config = small_config(tmp_path)
    done = cli("model", "import", config, "--id", "tiny_llama", "-o", "-")
    assert done.returncode == 0, done.stderr
    assert yaml.safe_load(done.stdout)["id"] == "tiny_llama"
    assert not (tmp_path / "-").exists()


def test_a_path_to_the_file_stdout_already_is_goes_through_stdout(tmp_path):
    """`-o /dev/stdout` with stdout redirected to a file, built without /dev: a link to
    the file the command's stdout is. Replacing that file would drop what is printed
    after it (into the replaced inode); written through stdout, both stay, in order."""
    small_config(tmp_path)
    (tmp_path / "link.yaml").symlink_to("printed.txt")
    with open(tmp_path / "printed.txt", "w") as stdout:
        done = subprocess.run(
            [*cli_command(), "model", "import", "cfg.json", "-o", "link.yaml"],
            cwd=tmp_path, env=cli_env(), stdout=stdout, stderr=subprocess.PIPE, text=True,
            timeout=120, stdin=subprocess.DEVNULL,
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    printed = (tmp_path / "printed.txt").read_text()
    assert printed.startswith("# Imported by `pdd-plan model import`"), printed
    assert printed.rstrip().endswith("wrote link.yaml"), printed
    assert (tmp_path / "link.yaml").is_symlink()


def _same_file_cases(tmp_path: Path) -> dict[str, tuple[list[str], str]]:
    """name -> (command line, the input it would replace)."""
    trace, config = tiny_trace(tmp_path), small_config(tmp_path)
    (tmp_path / "alias.jsonl").symlink_to(trace.name)
    os.link(config, tmp_path / "hard.json")
    (tmp_path / "p.yaml").write_text("plan: {architecture: pdd}\n")
    return {
        "trace": (["trace", "analyze", trace, "--workload-out", "t.jsonl"], "t.jsonl"),
        "trace via link": (["trace", "analyze", trace, "--scenario-out", "alias.jsonl"], "t.jsonl"),
        "config via hard link": (["model", "import", config, "-o", "hard.json"], "cfg.json"),
        "scenario": (["solve", "s.yaml", "--bom", "s.yaml"], "s.yaml"),
        "plan": (["simulate", "s.yaml", "p.yaml", "--trace-out", "p.yaml"], "p.yaml"),
    }


@pytest.mark.slow
@pytest.mark.parametrize("case", ["trace", "trace via link", "config via hard link", "scenario",
                                  "plan"])  # fmt: skip
def test_an_output_that_is_an_input_is_refused_before_any_work(cli, tmp_path, case):
    default_scenario(tmp_path)
    args, source = _same_file_cases(tmp_path)[case]
    before = checksums(tmp_path)
    done = cli(*args)
    out_path = args[-1]
    assert_one_error_line(done, 2, f"{out_path}:", "same file as the input", source)
    assert done.stdout == ""  # no analysis, no plan printed: refused before the work
    assert changed(before, checksums(tmp_path)) == set()


@pytest.mark.slow
def test_two_outputs_naming_one_file_are_refused(cli, tmp_path):
    done = cli("solve", "--bom", "x.csv", "--report", "x.csv")
    assert_one_error_line(done, 2, "x.csv", "--report", "same file as --bom")
    assert list(tmp_path.iterdir()) == []


def tiny_scenario(folder: Path) -> Path:
    """A small two-datacenter case: one sweep point solves in about a second."""
    scenario = {
        "name": "tiny",
        "model": "qwen3_32b",
        "datacenters": [
            {"id": "dc_a", "roles": ["prefill", "relay_decode"],
             "gpus": [{"gpu": "h100_sxm", "max_gpus": 64, "gpus_per_instance": [1, 2]}]},
            {"id": "dc_b", "roles": ["main_decode"],
             "gpus": [{"gpu": "l40s", "max_gpus": 64, "gpus_per_instance": [2]}]},
        ],
        "wan": {"rtt_ms": 10, "tiers": ["wave_10g"], "max_lines": 4},
        "workload": {
            "arrival_rate_per_s": 2,
            "input_tokens": {"kind": "fixed", "value": 4000},
            "output_tokens": {"kind": "fixed", "value": 200},
            "prefix_hit_rate": {"kind": "fixed", "value": 0.9},
        },
        "sla": {"ttft_p90_s": 5, "tpot_p90_ms": 100},
        "objective": {"kind": "min_cost"},
    }  # fmt: skip
    path = folder / "tiny.yaml"
    path.write_text(yaml.safe_dump(scenario, sort_keys=False))
    return path


SWEEP = ["sweep", "tiny.yaml", "--vary", "workload.arrival_rate_per_s=1", "--jobs", "1",
         "--time-limit", "5", "--out", "out"]  # fmt: skip


@pytest.mark.slow
def test_out_replaces_an_earlier_run_folder_whole_with_umask_modes(tmp_path):
    from pdd_plan.cli.output_paths import check_outputs

    tiny_scenario(tmp_path)
    out = tmp_path / "out"
    earlier_run(out)
    out.chmod(0o711)
    done = run_with_umask(SWEEP, tmp_path, 0o027)
    assert done.returncode == 0, done.stderr
    names = {p.name for p in out.iterdir()}
    assert {"sweep.csv", "sweep.json", "run.json"} <= names
    assert not names & {"plan.json", "bathtub.svg"}  # nothing of the other run is left
    assert len((out / "sweep.csv").read_text().splitlines()) == 1 + 1  # header, one point
    check_outputs([], folders={"--out": str(out)})  # and the next run may replace it
    assert stat.S_IMODE(out.stat().st_mode) == 0o711  # the folder keeps its mode
    assert {stat.S_IMODE(p.stat().st_mode) for p in out.iterdir()} == {0o640}  # umask 027
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "tiny.yaml"]  # no temp left


@pytest.mark.slow
def test_out_refuses_a_folder_holding_other_files(cli, tmp_path):
    out = tmp_path / "out"
    earlier_run(out)
    (out / "notes.txt").write_text("mine\n")
    before = checksums(tmp_path)
    done = cli("solve", "--out", "out")
    assert_one_error_line(done, 2, "out:", "--out", "notes.txt")
    assert done.stdout == ""
    assert changed(before, checksums(tmp_path)) == set()


@pytest.mark.slow
def test_out_refuses_a_folder_holding_the_input(cli, tmp_path):
    (tmp_path / "out").mkdir()
    default_scenario(tmp_path).rename(tmp_path / "out" / "s.yaml")
    before = checksums(tmp_path)
    done = cli("solve", "out/s.yaml", "--out", "out")
    assert_one_error_line(done, 2, "--out", "the input out/s.yaml")
    assert changed(before, checksums(tmp_path)) == set()


@pytest.mark.slow
def test_an_interrupted_out_never_leaves_a_mixed_folder(tmp_path):
    """Whenever SIGTERM lands, the folder is the earlier run's, untouched, or this run's
    complete set: never the two mixed."""
    tiny_scenario(tmp_path)
    out = tmp_path / "out"
    earlier_run(out)
    before = checksums(out)
    done = interrupt_after(SWEEP, tmp_path, 4.0, sig=15)
    assert_no_traceback(done)
    names = {p.name for p in out.iterdir()}
    finished = {"sweep.csv", "sweep.json", "run.json"} <= names and "plan.json" not in names
    # the one file an unfinished sweep adds is its journal, kept for --resume (docs/reports.md)
    untouched = {k: v for k, v in checksums(out).items() if k != ".sweep-journal.jsonl"}
    assert untouched == before or finished, (names, done.stderr)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "tiny.yaml"]  # no temp left


@pytest.mark.parametrize("umask, mode", [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_new_files_respect_the_umask(tmp_path, umask, mode):
    small_config(tmp_path)
    done = run_with_umask(["model", "import", "cfg.json", "-o", "m.yaml"], tmp_path, umask)
    assert done.returncode == 0, done.stderr
    assert stat.S_IMODE(os.stat(tmp_path / "m.yaml").st_mode) == mode


@pytest.mark.slow
def test_a_250_character_name_works_and_a_256_character_one_is_refused(cli, tmp_path):
    small_config(tmp_path)
    legal = "m" * 245 + ".yaml"  # 250 characters: its temporary sibling must not be longer
    done = cli("model", "import", "cfg.json", "-o", legal)
    assert done.returncode == 0, done.stderr
    assert yaml.safe_load((tmp_path / legal).read_text())["layers"]
    too_long = "m" * 251 + ".yaml"
    done = cli("model", "import", "cfg.json", "-o", too_long)
    assert_one_error_line(done, 2, "--output", "too long")
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["cfg.json", legal])


def _bad_path_cases(tmp_path: Path) -> dict[str, tuple[str, str]]:
    """name -> (output path, what the error must say)."""
    (tmp_path / "folder").mkdir()
    (tmp_path / "afile").write_text("x\n")
    return {
        "folder as file": ("folder", "a folder"),
        "missing parent": ("nowhere/x.out", "does not exist"),
        "parent is a file": ("afile/x.out", "which is a file"),
    }


@pytest.mark.slow
@pytest.mark.parametrize("case", ["folder as file", "missing parent", "parent is a file"])
@pytest.mark.parametrize("command", ["solve --bom", "trace --workload-out", "model -o",
                                     "report -o", "simulate --trace-out"])  # fmt: skip
def test_an_unwritable_output_is_refused_before_any_work(cli, tmp_path, case, command):
    path, says = _bad_path_cases(tmp_path)[case]
    tiny_trace(tmp_path), small_config(tmp_path)
    args = {
        "solve --bom": ["solve", "--bom", path],
        "trace --workload-out": ["trace", "analyze", "t.jsonl", "--workload-out", path],
        "model -o": ["model", "import", "cfg.json", "-o", path],
        "report -o": ["report", "--output", path],
        "simulate --trace-out": ["simulate", "default", "p.yaml", "--trace-out", path],
    }[command]
    (tmp_path / "p.yaml").write_text("plan: {architecture: pdd}\n")
    before = checksums(tmp_path)
    start = time.perf_counter()
    done = cli(*args)
    assert_one_error_line(done, 2, f"{path}:", args[-2], says)
    assert done.stdout == ""  # nothing solved, analysed or imported first
    assert time.perf_counter() - start < 30
    assert changed(before, checksums(tmp_path)) == set()


@pytest.mark.slow
def test_out_given_an_existing_file_or_a_dash_is_refused(cli, tmp_path):
    (tmp_path / "out").write_text("a file\n")
    done = cli("solve", "--out", "out")
    assert_one_error_line(done, 2, "out:", "--out", "a file")
    assert (tmp_path / "out").read_text() == "a file\n"
    done = cli("solve", "--out", "-")
    assert_one_error_line(done, 2, "--out", "'-'", "a folder path")
    assert done.stdout == ""


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write a chmod 444 file anyway")
def test_a_read_only_file_is_refused(cli, tmp_path):
    small_config(tmp_path)
    (tmp_path / "m.yaml").write_text("keep\n")
    (tmp_path / "m.yaml").chmod(0o444)
    done = cli("model", "import", "cfg.json", "-o", "m.yaml")
    assert_one_error_line(done, 2, "m.yaml", "read-only file")
    assert (tmp_path / "m.yaml").read_text() == "keep\n"


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a chmod 555 folder anyway")
def test_a_read_only_folder_is_refused(cli, tmp_path):
    small_config(tmp_path)
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o555)
    try:
        done = cli("model", "import", "cfg.json", "-o", "locked/m.yaml")
    finally:
        locked.chmod(0o755)
    assert_one_error_line(done, 2, "locked/m.yaml", "cannot write")
