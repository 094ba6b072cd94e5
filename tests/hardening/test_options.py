"""Numeric command-line options out of range (#10 C, item 12): `estimate --isl 2^63`
crashed, `--batch 10^20` computed nonsense. Every numeric option of every command has a
documented range (in its --help), checked before any file is read: one line naming the
option and the range, exit 2."""

from __future__ import annotations

import typing

import pytest
import typer

from pdd_plan.cli.app import app
from pdd_plan.cli.bounds import check_range
from pdd_plan.errors import InputError
from tests.hardening.conftest import assert_one_error_line

ESTIMATE = ["estimate", "--model", "llama_3_1_70b", "--gpu", "h100_sxm"]
BIG = str(2**63)  # one past the largest signed 64-bit integer
HUGE = str(10**20)

# (id, args, option, the range as the message must say it)
CASES = [
    ("isl_2^63", [*ESTIMATE, "--isl", BIG, "--osl", "8"], "--isl", "1 to 10,000,000"),
    ("osl_2^63", [*ESTIMATE, "--isl", "8", "--osl", BIG], "--osl", "1 to 10,000,000"),
    ("isl_0", [*ESTIMATE, "--isl", "0", "--osl", "8"], "--isl", "1 to 10,000,000"),
    ("batch_1e20", [*ESTIMATE, "--isl", "8", "--osl", "8", "--batch", HUGE], "--batch",
     "1 to 1,000,000"),
    ("batch_negative", [*ESTIMATE, "--isl", "8", "--osl", "8", "--batch", "-3"], "--batch",
     "1 to 1,000,000"),
    ("gpus_1e20", [*ESTIMATE, "--isl", "8", "--osl", "8", "--gpus-per-instance", HUGE],
     "--gpus-per-instance", "1 to 4,096"),
    # a sample of every other command's numeric options; the files named do not exist:
    # the option is checked first
    ("solve_time_nan", ["solve", "none.yaml", "--time-limit", "nan"], "--time-limit",
     "0.1 to 86,400 s"),
    ("compare_time_inf", ["compare", "none.yaml", "--time-limit", "inf"], "--time-limit",
     "0.1 to 86,400 s"),
    ("explain_time_tiny", ["explain", "none.yaml", "--time-limit", "0.01"], "--time-limit",
     "0.1 to 86,400 s"),
    ("report_jobs_0", ["report", "none.yaml", "-o", "r.html", "--jobs", "0"], "--jobs",
     "1 to 1,024"),
    ("sweep_time_1e9", ["sweep", "none.yaml", "--vary", "workload.arrival_rate_per_s=1",
                        "--time-limit", "1e9"], "--time-limit", "0.1 to 86,400 s"),
    ("simulate_requests_1e20", ["simulate", "none.yaml", "none.yaml", "--requests", HUGE],
     "--requests", "1 to 10,000,000"),
    ("simulate_seed_negative", ["simulate", "none.yaml", "none.yaml", "--seed", "-1"],
     "--seed", "0 to 9,223,372,036,854,775,807"),
    ("simulate_seed_2^64", ["simulate", "none.yaml", "none.yaml", "--seed", str(2**64)],
     "--seed", "0 to 9,223,372,036,854,775,807"),
    ("simulate_warmup_nan", ["simulate", "none.yaml", "none.yaml", "--warmup-frac", "nan"],
     "--warmup-frac", "0 to 0.9"),
    ("model_show_context_1e8", ["model", "show", "llama_3_1_70b", "--context", "100000000"],
     "--context", "1 to 10,000,000"),
    ("trace_block_tokens_0", ["trace", "analyze", "none.jsonl", "--block-tokens", "0"],
     "--block-tokens", "1 to 1,048,576"),
    ("trace_cache_400_digits", ["trace", "analyze", "none.jsonl", "--cache-capacity",
                                "9" * 400], "--cache-capacity", "0 to 1,000,000,000,000,000"),
    ("trace_decode_cache_huge", ["trace", "analyze", "none.jsonl", "--decode-cache-capacity",
                                 "2000000000g"], "--decode-cache-capacity",
     "0 to 1,000,000,000,000,000"),
    ("calibrate_tp_0", ["calibrate", "steps", "none.csv", "-o", "p.yaml", "--tp", "0"], "--tp",
     "1 to 4,096"),
]  # fmt: skip


@pytest.mark.parametrize("args, option, bound", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_out_of_range_option_is_one_line(cli, tmp_path, args, option, bound):
    result = cli(*args)
    assert_one_error_line(result, 2, f"command line: {option}: found", f"from {bound}")
    assert list(tmp_path.iterdir()) == []  # nothing written


def test_the_bounds_themselves_are_taken(cli):
    """The largest values allowed run: estimate at 10M tokens, batch 1M, 4,096 GPUs."""
    args = ["--isl", "10000000", "--osl", "10000000", "--batch", "1000000"]
    result = cli(*ESTIMATE, *args, "--gpus-per-instance", "4096", "--format", "json")
    assert result.returncode == 0, result.stderr
    assert '"batch": 1000000' in result.stdout


def test_help_documents_the_range(cli):
    text = " ".join(cli("estimate", "--help").stdout.split())
    for needle in ("[1 to 10,000,000]", "[1 to 1,000,000]", "[1 to 4,096]"):
        assert needle in text, needle


def _numeric_options():
    root = typer.main.get_command(app)

    def walk(cmd, path):  # typer vendors click privately: groups and types by shape
        if hasattr(cmd, "commands"):
            for name, sub in cmd.commands.items():
                yield from walk(sub, (*path, name))
            return
        for param in cmd.params:
            annotation = param.type_descriptor.annotation  # int, float, int | None...
            if any(a in (int, float) for a in typing.get_args(annotation) or (annotation,)):
                yield " ".join(path), param

    return list(walk(root, ()))


def test_every_numeric_option_of_every_command_declares_a_range():
    options = _numeric_options()
    names = {(cmd, p.opts[0]) for cmd, p in options}
    # the ones the issue names are among them (the walk sees the real commands)
    for expected in [("estimate", "--isl"), ("simulate", "--seed"), ("solve", "--time-limit"),
                     ("trace analyze", "--block-tokens"), ("model show", "--context")]:  # fmt: skip
        assert expected in names, expected
    for cmd, param in options:
        assert param.callback is not None, (cmd, param.opts)
        assert " to " in (param.help or "") and "]" in param.help, (cmd, param.opts, param.help)


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -1, 11])
def test_check_range_refuses_outside_and_non_finite(value):
    with pytest.raises(InputError) as raised:
        check_range("--x", value, 0, 10)
    assert str(raised.value).startswith("command line: --x: found ")


@pytest.mark.parametrize("value", [None, 0, 10, 5.5])
def test_check_range_takes_inside_and_absent(value):
    check_range("--x", value, 0, 10)
