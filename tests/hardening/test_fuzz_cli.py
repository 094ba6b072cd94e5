"""Bug hunt (round 21, helper hb): command-line values and exit codes found by fuzzing.

1. A numeric option given text that is no number (`--jobs abc`, `--isl 0x10`, `--time-limit
   ''`, an integer option given `1e309`) was refused by typer's converter in its own words
   ("Invalid value for '--jobs': Input should be a valid integer"): exit 2, but the line
   named neither the value found nor the range the option's --help documents. docs/guarantees.md
   promises one line per problem "naming the file, the key path, the value found and the
   value expected", and that every numeric option's range is "checked before any file is
   read" with that range in the message.
2. `compare` on a scenario where no architecture has a plan exited 0 with a table of
   "infeasible" rows: the exit code must be the truth (docs/guarantees.md: 3 infeasible, always a
   proof; 5 not proven), as `solve` exits on the same scenario.
"""

from __future__ import annotations

import copy

import pytest
import yaml

from tests.hardening.conftest import TINY, assert_one_error_line

# (args, option, the range as the option's --help states it); the files do not exist:
# the option is checked first, so the line must be about the option
NOT_NUMBERS = [
    (["sweep", "none.yaml", "--vary", "workload.arrival_rate_per_s=1", "--jobs", "abc"],
     "--jobs", "'abc'", "a whole number from 1 to 1,024"),
    (["solve", "none.yaml", "--time-limit", ""], "--time-limit", "''",
     "a number from 0.1 to 86,400 s"),
    (["simulate", "none.yaml", "none.yaml", "--requests", "0x10"], "--requests", "'0x10'",
     "a whole number from 1 to 10,000,000"),
    (["trace", "analyze", "none.jsonl", "--block-tokens", "1e309"], "--block-tokens",
     "'1e309'", "a whole number from 1 to 1,048,576"),
    (["estimate", "--model", "qwen3_32b", "--gpu", "h100_sxm", "--isl", "4k", "--osl", "8"],
     "--isl", "'4k'", "a whole number from 1 to 10,000,000"),
]  # fmt: skip


@pytest.mark.parametrize("args,option,found,expected", NOT_NUMBERS,
                         ids=[c[1] + "=" + c[2] for c in NOT_NUMBERS])  # fmt: skip
def test_text_that_is_no_number_names_the_value_and_the_range(cli, args, option, found, expected):
    line = assert_one_error_line(cli(*args), 2)
    assert line == f"error: command line: {option}: found {found}; expected {expected}"


@pytest.mark.slow
def test_compare_with_no_architecture_feasible_exits_3_after_its_table(cli, tmp_path):
    """An SLA no instance meets even unloaded (TTFT 0.1 ms: a 32B prefill of thousands of
    tokens takes tens of ms on any GPU; TPOT 0.01 ms: one decode step reads the 64 GB of
    weights, over 10 ms at 5 TB/s) leaves every architecture infeasible: `solve` exits 3,
    so must `compare`, with one `error:` line, its table still printed on stdout."""
    scenario = copy.deepcopy(TINY)
    scenario["sla"] = {"ttft_p90_s": 0.0001, "tpot_p90_ms": 0.01}
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(scenario))
    solved = cli("solve", path, "--format", "json")
    assert solved.returncode == 3, solved.stderr
    done = cli("compare", path)
    line = assert_one_error_line(done, 3, "no architecture the scenario allows has a plan")
    for name in ("PDD", "IDC-PD", "CDC-PD", "colocated"):
        assert f"{name}: " in line
    assert done.stdout.count("infeasible") == 4  # one row per architecture, as before
    as_json = cli("compare", path, "--format", "json")
    assert_one_error_line(as_json, 3)
    assert '"status": "infeasible"' in as_json.stdout
