"""Shared checks for the hardening tests (issue #10).

Every case builds its fixtures in a temporary directory (never a system path: as root a
faulty write to `/dev/null` replaces the device for the whole machine), runs the real CLI,
and asserts the outcome a careless user or an attacker must get: the exit code, exactly
one clear `error:` line on stderr (or none), no traceback, and that no file other than
the ones asked for changed (checksums of every file in the directory, decoy symlink
targets included).
"""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

# a two-datacenter case that solves in about a second (a 32B dense model on H100 / L40S)
TINY = {
    "name": "tiny",
    "model": "qwen3_32b",
    "datacenters": [
        {"id": "dc_a", "roles": ["prefill", "relay_decode", "decode", "colocated"],
         "gpus": [{"gpu": "h100_sxm", "max_gpus": 64, "gpus_per_instance": [1, 2]}]},
        {"id": "dc_b", "roles": ["main_decode"],
         "gpus": [{"gpu": "l40s", "max_gpus": 64, "gpus_per_instance": [2]}]},
    ],
    "wan": {"rtt_ms": 10, "tiers": ["wave_10g"], "max_lines": 4},
    "workload": {
        "arrival_rate_per_s": 2,
        "input_tokens": {"kind": "lognormal", "median": 4000, "sigma": 0.5, "low": 256,
                         "high": 16384},
        "output_tokens": {"kind": "lognormal", "median": 200, "sigma": 0.5, "low": 8,
                          "high": 1024},
        "prefix_hit_rate": {"kind": "bins", "bins": [
            {"low": 0.0, "high": 0.3, "share": 0.05}, {"low": 0.3, "high": 0.7, "share": 0.05},
            {"low": 0.7, "high": 0.9, "share": 0.1}, {"low": 0.9, "high": 0.99, "share": 0.8}]},
    },
    "sla": {"ttft_p90_s": 5, "tpot_p90_ms": 100},
    "objective": {"kind": "min_cost"},
}  # fmt: skip


def cli_command() -> list[str]:
    exe = Path(sys.executable).with_name("pdd-plan")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "pdd_plan"]


def cli_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PDD_PLAN_DEBUG"}
    env["COLUMNS"] = "200"
    if not Path(sys.executable).with_name("pdd-plan").exists():
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p
        )
    env.update(extra)
    return env


@pytest.fixture
def cli(tmp_path):
    """Run the CLI in `tmp_path` (or `cwd`), with a time limit so a hang fails the test."""

    def run(*args: str, cwd: Path | None = None, timeout: float = 120, stdin=None, **env):
        return subprocess.run(
            [*cli_command(), *map(str, args)],
            cwd=cwd or tmp_path,
            env=cli_env(**env),
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=stdin if stdin is not None else subprocess.DEVNULL,
        )

    return run


def assert_no_traceback(result: subprocess.CompletedProcess) -> None:
    assert "Traceback" not in result.stderr, result.stderr
    assert "Traceback" not in result.stdout, result.stdout


def assert_one_error_line(
    result: subprocess.CompletedProcess, exit_code: int = 2, *fragments: str
) -> str:
    """Exit `exit_code`, one `error: ` line on stderr naming every fragment, no traceback."""
    assert_no_traceback(result)
    assert result.returncode == exit_code, (result.returncode, result.stdout, result.stderr)
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: "), lines[0]
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])
    return lines[0]


def checksums(folder: Path) -> dict[str, str]:
    """Digest of every regular file under `folder` (links followed to regular files),
    with its mode, and the kind of every other entry, so any change shows."""
    seen: dict[str, str] = {}
    for path in sorted(folder.rglob("*")):
        rel = str(path.relative_to(folder))
        if path.is_symlink():
            seen[rel] = "link->" + os.readlink(path)
        elif path.is_fifo():
            seen[rel] = "fifo"
        elif path.is_file():
            digest = hashlib.sha256(path.read_bytes()).hexdigest()
            seen[rel] = f"{digest}:{oct(path.stat().st_mode & 0o7777)}"
        elif path.is_dir():
            seen[rel] = "dir"
    return seen


def changed(before: dict[str, str], after: dict[str, str]) -> set[str]:
    return {k for k in before.keys() | after.keys() if before.get(k) != after.get(k)}


@dataclass
class Interrupted:
    returncode: int
    stdout: str
    stderr: str


def interrupt_after(args: list[str], cwd: Path, seconds: float, sig=signal.SIGINT, **env):
    """Start the CLI, send `sig` after `seconds`, and collect what it printed."""
    proc = subprocess.Popen(
        [*cli_command(), *map(str, args)],
        cwd=cwd,
        env=cli_env(**env),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    try:
        out, err = proc.communicate(timeout=seconds)
    except subprocess.TimeoutExpired:
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=60)
    return Interrupted(proc.returncode, out, err)


def earlier_run(folder: Path) -> None:
    """An output folder as another run left it: a solve's plan and a bathtub plot, neither
    of which a sweep over the arrival rate writes."""
    folder.mkdir()
    (folder / "plan.json").write_text('{"from": "another run"}\n')
    (folder / "bathtub.svg").write_text("<svg>another run</svg>\n")


def read_fifo_in_thread(fifo: Path) -> tuple[threading.Thread, list[bytes]]:
    got: list[bytes] = []

    def reader() -> None:
        with open(fifo, "rb") as handle:
            got.append(handle.read())

    thread = threading.Thread(target=reader, daemon=True)
    thread.start()
    return thread, got
