"""Issue #10, items 10, 16 and 23: traces at the edges, and what trace analyze writes.

A trace row that Python's parsers refuse (a CSV field over csv's limit, a 5,000-digit
integer, JSON nested 100,000 deep), a timestamp that would overflow the statistics, an
over-long line, a FIFO: each is one error line, exit 2. What trace analyze writes, its
own scenario loader reads back; its JSON has no NaN. Its memory follows the cache
capacities asked for, not the trace.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from pdd_plan.loaders.scenario import load_scenario
from tests.hardening.conftest import (
    assert_one_error_line,
    changed,
    checksums,
    cli_command,
    cli_env,
)
from tests.hardening.test_inputs import IS_ROOT, ROOT_REASON, fifo_writer

MAX_LINE_CHARS = 4 * 1024 * 1024  # the documented cap (loaders/traces.py)


def row(timestamp, input_length=1000, output_length=50, hash_ids=(1, 2)) -> str:
    return json.dumps(
        {
            "timestamp": timestamp,
            "input_length": input_length,
            "output_length": output_length,
            "hash_ids": list(hash_ids),
        }
    )


def write_lines(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def strict_json(text: str):
    """json.loads that refuses NaN and Infinity, which JSON does not have."""

    def refuse(constant):
        raise ValueError(f"{constant} is not JSON")

    return json.loads(text, parse_constant=refuse)


# ---- item 10: rows the parsers refuse, values that overflow ----------------------------------


def test_an_azure_field_over_csvs_limit_is_one_line(cli, tmp_path):
    (tmp_path / "az.csv").write_text(
        "TIMESTAMP,ContextTokens,GeneratedTokens\n"
        "2023-11-16 18:17:03.5,100,5\n"
        f"2023-11-16 18:17:04.5,{'1' * 140_000},5\n"  # over 131,072 characters
    )
    before = checksums(tmp_path)
    result = cli("trace", "analyze", "az.csv", timeout=60)
    assert_one_error_line(result, 2, "az.csv: line 3", "field larger than field limit")
    assert changed(before, checksums(tmp_path)) == set()


def test_an_integer_of_5000_digits_is_one_line(cli, tmp_path):
    huge = "9" * 5_000  # Python refuses to convert more than 4,300 digits
    write_lines(
        tmp_path / "t.jsonl",
        [row(0), '{"timestamp": 1000, "input_length": ' + huge + ', "output_length": 5, '
         '"hash_ids": [1]}'],
    )  # fmt: skip
    result = cli("trace", "analyze", "t.jsonl", timeout=60)
    assert_one_error_line(result, 2, "t.jsonl: line 2", "4300 digits")


def test_hash_ids_nested_100000_deep_is_one_line(cli, tmp_path):
    nested = "[" * 100_000 + "]" * 100_000
    write_lines(
        tmp_path / "t.jsonl",
        [row(0), '{"timestamp": 1000, "input_length": 10, "output_length": 5, "hash_ids": '
         + nested + "}"],
    )  # fmt: skip
    result = cli("trace", "analyze", "t.jsonl", timeout=60)
    assert_one_error_line(result, 2, "t.jsonl: line 2", "nested too deeply")


@pytest.mark.parametrize("stamp", ["1e400", "1e308", "-1", "NaN"])
def test_a_mooncake_timestamp_out_of_range_is_one_line(cli, tmp_path, stamp):
    write_lines(
        tmp_path / "t.jsonl",
        [row(0), '{"timestamp": ' + stamp + ', "input_length": 10, "output_length": 5, '
         '"hash_ids": [1]}'],
    )  # fmt: skip
    result = cli("trace", "analyze", "t.jsonl", "--format", "json", timeout=60)
    assert_one_error_line(result, 2, "t.jsonl: line 2, timestamp", "milliseconds from 0 to")


def test_an_azure_timestamp_of_1e308_is_one_line(cli, tmp_path):
    (tmp_path / "az.csv").write_text(
        "TIMESTAMP,ContextTokens,GeneratedTokens\n0,100,5\n1e308,100,5\n"
    )
    result = cli("trace", "analyze", "az.csv", timeout=60)
    assert_one_error_line(result, 2, "az.csv: line 3, TIMESTAMP", "seconds from 0 to 1e+12")


def test_the_largest_timestamps_allowed_give_finite_statistics(cli, tmp_path):
    # 1e15 ms = 1e12 s, the cap: the gaps' variance (1e24) is far from overflowing
    write_lines(tmp_path / "t.jsonl", [row(0), row(1), row(1e15)])
    result = cli("trace", "analyze", "t.jsonl", "--format", "json", timeout=60)
    assert result.returncode == 0, result.stderr
    out = strict_json(result.stdout)
    # gaps 1e-3 s and ~1e12 s: mean g = 5e11, c² = var/mean² = 1 (two gaps, one ~0)
    assert out["burstiness_cv2"] == pytest.approx(1.0, rel=1e-9)
    assert out["arrival_rate_per_s"] == pytest.approx(2 / 1e12, rel=1e-9)


# ---- item 16: what trace analyze writes, it reads back ---------------------------------------


def test_a_rate_the_loader_rejects_is_refused_and_nothing_written(cli, tmp_path):
    # two requests 1e-290 ms apart: 1e293 req/s, far over the loader's 1e7
    write_lines(tmp_path / "fast.jsonl", [row(0), row(1e-290)])
    before = checksums(tmp_path)
    result = cli("trace", "analyze", "fast.jsonl", "--workload-out", "w.yaml", timeout=60)
    assert_one_error_line(
        result, 2, "fast.jsonl: workload.arrival_rate_per_s", "1e+293", "<= 1e+07", "not written"
    )
    assert changed(before, checksums(tmp_path)) == set()  # no w.yaml


def test_the_summary_of_such_a_trace_is_strict_json(cli, tmp_path):
    write_lines(tmp_path / "fast.jsonl", [row(0), row(1e-290), row(2e-290)])
    result = cli("trace", "analyze", "fast.jsonl", "--format", "json", timeout=60)
    assert result.returncode == 0, result.stderr
    out = strict_json(result.stdout)  # no NaN, no Infinity
    assert out["burstiness_cv2"] == pytest.approx(0.0, abs=1e-9)  # equal gaps: a clock


def test_a_burstiness_the_loader_rejects_is_refused(cli, tmp_path):
    # 3,000 requests at 0 and one at 1e6 s: gaps 2,999 zeros and one 1e6, c² = n - 1 = 2,999
    lines = [row(0)] * 3_000 + [row(1e9)]
    write_lines(tmp_path / "bursty.jsonl", lines)
    before = checksums(tmp_path)
    result = cli(
        "trace", "analyze", "bursty.jsonl", "--scenario-out", "s.yaml", "--workload-out",
        "w.yaml", timeout=60,
    )  # fmt: skip
    assert_one_error_line(
        result, 2, "bursty.jsonl: workload.burstiness_cv2", "2999", "<= 1000", "not written"
    )
    assert changed(before, checksums(tmp_path)) == set()


def test_a_slow_trace_writes_its_rate_to_six_significant_digits(cli, tmp_path):
    # a request every 123,456.789 s: 8.1000007e-6 req/s, which six decimals made 8e-6
    gap_ms = 123_456_789
    write_lines(tmp_path / "slow.jsonl", [row(0), row(gap_ms), row(2 * gap_ms)])
    result = cli("trace", "analyze", "slow.jsonl", "--scenario-out", "s.yaml", timeout=60)
    assert result.returncode == 0, result.stderr
    scenario = load_scenario(tmp_path / "s.yaml")
    assert scenario.workload.arrival_rate_per_s == pytest.approx(1 / 123_456.789, rel=1e-5)


def test_what_is_written_reads_back_or_nothing_is(cli, tmp_path):
    # one request a year (3.2e-8 req/s): whatever the loader's lowest rate, the tool
    # either writes a scenario the loader reads, or refuses naming the rate
    year_ms = 365 * 86_400 * 1000
    write_lines(tmp_path / "slow.jsonl", [row(0), row(year_ms), row(2 * year_ms)])
    result = cli("trace", "analyze", "slow.jsonl", "--scenario-out", "s.yaml", timeout=60)
    if result.returncode == 0:
        assert load_scenario(tmp_path / "s.yaml").workload.arrival_rate_per_s > 0
    else:
        assert_one_error_line(result, 2, "workload.arrival_rate_per_s", "3.17098e-08")
        assert not (tmp_path / "s.yaml").exists()


# ---- item 23: bounded lines and bounded memory ----------------------------------------------


def peak_rss_mib(args: list[str], cwd: Path) -> tuple[subprocess.CompletedProcess, float]:
    """Run the CLI under a small parent whose only child it is; the child's peak RSS."""
    wrapper = (
        "import json, resource, subprocess, sys\n"
        "done = subprocess.run(json.loads(sys.argv[1]), capture_output=True, text=True)\n"
        "sys.stderr.write(done.stderr)\n"
        "peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss\n"
        "print(json.dumps([done.returncode, peak / 1024]))\n"
        "sys.exit(0)\n"
    )
    command = json.dumps([*cli_command(), *args])
    done = subprocess.run(
        [sys.executable, "-c", wrapper, command],
        cwd=cwd,
        env=cli_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    code, peak = json.loads(done.stdout.strip().splitlines()[-1])
    return subprocess.CompletedProcess(args, code, "", done.stderr), peak


def unique_blocks_trace(path: Path, requests: int, blocks: int = 100) -> None:
    with path.open("w") as handle:
        for i in range(requests):
            ids = range(10_000_000 + i * blocks, 10_000_000 + (i + 1) * blocks)
            handle.write(row(i * 1000, blocks * 512, 100, ids) + "\n")


@pytest.mark.slow
def test_an_over_long_line_is_refused_without_being_held(cli, tmp_path):
    write_lines(tmp_path / "small.jsonl", [row(0), row(1000)])
    _, baseline_mib = peak_rss_mib(["trace", "analyze", "small.jsonl"], tmp_path)
    with (tmp_path / "long.jsonl").open("w") as handle:  # a 64 MiB second line
        handle.write(row(0) + "\n" + '{"timestamp": 1, "hash_ids": [' + "1, " * (1 << 24))
    before = checksums(tmp_path)
    result, peak_mib = peak_rss_mib(["trace", "analyze", "long.jsonl"], tmp_path)
    assert_one_error_line(
        result, 2, "long.jsonl: line 2", f"more than {MAX_LINE_CHARS:,} characters"
    )
    # holding the line would take 64 MiB (bytes) + 64 MiB (text) at least
    assert peak_mib - baseline_mib < 40, (peak_mib, baseline_mib)
    assert changed(before, checksums(tmp_path)) == set()


@pytest.mark.slow
def test_memory_follows_the_capacity_asked_for(tmp_path):
    unique_blocks_trace(tmp_path / "small.jsonl", 20)
    _, baseline_mib = peak_rss_mib(["trace", "analyze", "small.jsonl"], tmp_path)
    unique_blocks_trace(tmp_path / "u.jsonl", 8_000)  # 800,000 distinct blocks, 8 MB
    args = ["trace", "analyze", "u.jsonl", "--cache-capacity", "1M", "--format", "json"]
    result, peak_mib = peak_rss_mib(args, tmp_path)
    assert result.returncode == 0, result.stderr
    # holding every block would take >= 800,000 x (an int + a dict slot) = 50+ MiB
    assert peak_mib - baseline_mib < 30, (peak_mib, baseline_mib)


@pytest.mark.slow
def test_the_unlimited_ceiling_only_when_asked(cli, tmp_path):
    write_lines(tmp_path / "t.jsonl", [row(0, 1200, 50, [1, 2, 3]), row(1000, 1100, 50, [1, 2, 9])])
    args = ("trace", "analyze", "t.jsonl", "--cache-unit", "blocks", "--format", "json")
    result = cli(*args, "--cache-capacity", "2", timeout=60)
    assert result.returncode == 0, result.stderr
    out = strict_json(result.stdout)
    cache = out["prefix_cache"]
    assert cache["unlimited"] is None and any("not computed" in n for n in out["notes"])
    assert cache["decode"]["capacity_blocks"] == 2  # the decode side follows the first
    # by hand: request 2 finds blocks 1, 2 cached (1,024 of 1,100 tokens)
    assert cache["prefill"]["token_hit_frac"] == pytest.approx(1024 / 2300)
    result = cli(*args, "--cache-capacity", "2,unlimited", timeout=60)
    cache = strict_json(result.stdout)["prefix_cache"]
    assert cache["unlimited"]["token_hit_frac"] == pytest.approx(1024 / 2300)


# ---- items 8 and 9 for traces: paths and special files ---------------------------------------


@pytest.mark.parametrize("through_link", [False, True], ids=["fifo", "link-to-fifo"])
def test_a_fifo_trace_is_refused_without_blocking(cli, tmp_path, through_link):
    fifo = tmp_path / "t.jsonl"
    os.mkfifo(fifo)
    name = fifo.name
    if through_link:
        (tmp_path / "link.jsonl").symlink_to(fifo)
        name = "link.jsonl"
    before = checksums(tmp_path)
    with fifo_writer(fifo, (row(0) + "\n").encode() * 1000):  # endless valid rows
        result = cli("trace", "analyze", name, timeout=60)
    assert_one_error_line(result, 2, name, "named pipe", "regular file")
    assert changed(before, checksums(tmp_path)) == set()


def test_a_trace_path_through_a_file_or_too_long_is_one_line(cli, tmp_path):
    write_lines(tmp_path / "t.jsonl", [row(0), row(1000)])
    result = cli("trace", "analyze", "t.jsonl/x.jsonl", timeout=60)
    assert_one_error_line(result, 2, "t.jsonl/x.jsonl", "not a directory")
    result = cli("trace", "analyze", "t" * 300 + ".jsonl", timeout=60)
    assert_one_error_line(result, 2, "a path too long", "306 characters")


@pytest.mark.skipif(IS_ROOT, reason=ROOT_REASON)
def test_a_mode_000_trace_is_one_line(cli, tmp_path):
    trace = write_lines(tmp_path / "t.jsonl", [row(0), row(1000)])
    trace.chmod(0)
    try:
        result = cli("trace", "analyze", "t.jsonl", timeout=60)
    finally:
        trace.chmod(0o644)
    assert_one_error_line(result, 2, "t.jsonl", "permission denied")


def test_a_base_scenario_fifo_is_refused(cli, tmp_path):
    write_lines(tmp_path / "t.jsonl", [row(0), row(1000)])
    os.mkfifo(tmp_path / "base.yaml")
    result = cli(
        "trace", "analyze", "t.jsonl", "--scenario-out", "s.yaml", "--base", "base.yaml",
        timeout=60,
    )  # fmt: skip
    assert_one_error_line(result, 2, "base.yaml", "named pipe")
    assert not (tmp_path / "s.yaml").exists()


def test_the_written_scenario_loads(cli, tmp_path):
    write_lines(tmp_path / "t.jsonl", [row(i * 1000, 1000 + i, 20, [1, 2, i]) for i in range(50)])
    result = cli("trace", "analyze", "t.jsonl", "--scenario-out", "s.yaml", timeout=60)
    assert result.returncode == 0, result.stderr
    scenario = load_scenario(tmp_path / "s.yaml")
    assert scenario.workload.arrival_rate_per_s == pytest.approx(1.0)
    assert yaml.safe_load((tmp_path / "s.yaml").read_text())["workload"]["burstiness_cv2"] == 0
