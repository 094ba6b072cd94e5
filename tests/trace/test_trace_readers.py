"""Reading the two trace formats, and rejecting bad files with one line and exit 2."""

from __future__ import annotations

import json

import numpy as np
import pytest
from trace_helpers import row, write_mooncake

from pdd_plan.errors import InputError
from pdd_plan.loaders.trace_analyze import analyze
from pdd_plan.loaders.traces import detect_format, read_trace

AZURE = (
    "TIMESTAMP,ContextTokens,GeneratedTokens\n"
    "2023-11-16 18:17:03.9799600,4808,10\n"
    "2023-11-16 18:17:04.0319600,3180,8\n"
    "2023-11-16 18:17:06.4799600,100,250\n"
)


def test_azure_csv_gives_seconds_and_lengths(tmp_path):
    path = tmp_path / "az.csv"
    path.write_text(AZURE)
    fmt, requests = read_trace(path)
    requests = list(requests)
    assert fmt == "azure"
    times = np.array([r.arrival_s for r in requests])
    np.testing.assert_allclose(times - times[0], [0.0, 0.052, 2.5], atol=1e-6)
    assert [(r.input_tokens, r.output_tokens) for r in requests] == [
        (4808, 10),
        (3180, 8),
        (100, 250),
    ]
    assert all(r.hash_ids is None for r in requests)


def test_azure_has_no_hit_rate(tmp_path):
    path = tmp_path / "trace.txt"  # no telling extension: the header decides
    path.write_text(AZURE)
    a = analyze(path)
    assert a.format == "azure" and not a.has_hashes
    assert a.prefill is None and a.unlimited is None and a.by_capacity == []
    assert a.arrivals.rate_per_s == pytest.approx(2 / 2.5)


def test_mooncake_milliseconds_become_seconds(tmp_path):
    path = write_mooncake(tmp_path / "m.log", [row(0, 10, [1]), row(1500, 20, [2])])
    assert detect_format(path) == "mooncake"
    _, requests = read_trace(path)
    assert [r.arrival_s for r in requests] == [0.0, 1.5]


def test_the_real_azure_traces_match_their_readme(shared_dir):
    # README: code mean context 2,048, mean output 28; conversation 1,155 and 211
    for name, rows, mean_in, mean_out in (
        ("AzureLLMInferenceTrace_code.csv", 8_819, 2_048, 28),
        ("AzureLLMInferenceTrace_conv.csv", 19_366, 1_155, 211),
    ):
        a = analyze(shared_dir / "data" / "traces" / name)
        assert a.arrivals.requests == rows
        assert round(a.input_tokens.mean()) == mean_in
        assert round(a.output_tokens.mean()) == mean_out
        assert 3_300 < a.arrivals.span_s < 3_600  # about an hour, 18:15-19:14


def test_format_in_overrides_detection(tmp_path):
    path = tmp_path / "az.jsonl"
    path.write_text(AZURE)
    with pytest.raises(InputError, match="line 1"):
        list(read_trace(path)[1])  # the extension says JSONL: the first line is not JSON
    assert read_trace(path, "azure")[0] == "azure"


GOOD = '{"timestamp": 0, "input_length": 10, "output_length": 1, "hash_ids": [1]}\n'


def _line(**fields) -> str:
    return json.dumps({"timestamp": 5, "input_length": 10, "output_length": 1, **fields})


BAD_MOONCAKE = [
    (_line(input_length="abc", hash_ids=[1]), "input_length", "'abc'"),
    (_line(input_length=0, hash_ids=[1]), "input_length", "0"),
    (_line(timestamp=-1, hash_ids=[1]), "timestamp", "-1"),
    (_line(), "hash_ids", "nothing"),
    (_line(hash_ids="x"), "hash_ids", "'x'"),
    ('{"timestamp": 5, "input_length": 10,', "", "invalid JSON"),
    ("[1, 2]", "", "a list"),
]


@pytest.mark.parametrize("line, field, found", BAD_MOONCAKE)
def test_a_bad_mooncake_row_is_one_line_naming_line_and_field(
    run_main, tmp_path, line, field, found
):
    (tmp_path / "bad.jsonl").write_text(GOOD + GOOD + line + "\n")
    result = run_main("trace", "analyze", "bad.jsonl")
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr
    assert "bad.jsonl" in lines[0] and "line 3" in lines[0]
    assert field in lines[0] and found in lines[0] and "expected" in lines[0]


HEADER = b"TIMESTAMP,ContextTokens,GeneratedTokens\n"
BAD_FILES = [
    ("empty.jsonl", b"", "an empty file"),
    ("bin.jsonl", b"\x00\x01\x02", "binary"),
    ("latin.jsonl", GOOD.encode() + b'{"timestamp": 1, "x": "\xe9"}\n', "not UTF-8"),
    ("one.jsonl", GOOD.encode(), "at least two arrival times"),
    ("head.csv", b"time,in,out\n1,2,3\n", "TIMESTAMP"),
    ("stamp.csv", HEADER + b"2023-13-45 99:00:00,5,5\n", "line 2, TIMESTAMP"),
    ("tokens.csv", HEADER + b"1.5,5,x\n", "line 2, GeneratedTokens"),
    ("short.csv", HEADER + b"1.5,5\n", "2 fields"),
    ("what.log", b"hello\n", "--format-in"),
]  # fmt: skip


@pytest.mark.parametrize("name, content, message", BAD_FILES)
def test_a_bad_file_is_one_line_and_exit_2(run_main, tmp_path, name, content, message):
    (tmp_path / name).write_bytes(content)
    result = run_main("trace", "analyze", name)
    assert result.returncode == 2, result.stdout
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and name in lines[0] and message in lines[0], lines


@pytest.mark.parametrize(
    "args, message",
    [
        (("missing.jsonl",), "no such file"),
        (("ok.jsonl", "--cache-capacity", "lots"), "--cache-capacity"),
        (("ok.jsonl", "--cache-unit", "bytes"), "--cache-unit"),
        (("ok.jsonl", "--plot", "x.pdf"), "--plot"),
        (("ok.jsonl", "--format-in", "parquet"), "--format-in"),
        (("az.csv", "--plot", "x.svg"), "prefix hashes"),
    ],
)
def test_bad_options_are_one_line_and_exit_2(run_main, tmp_path, args, message):
    write_mooncake(tmp_path / "ok.jsonl", [row(0, 10, [1]), row(1000, 10, [1])])
    (tmp_path / "az.csv").write_text(AZURE)
    result = run_main("trace", "analyze", *args)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], lines
    assert not (tmp_path / "x.svg").exists()


def test_the_installed_command_prints_one_line_and_exits_2(run_cli, tmp_path):
    # one real subprocess: no traceback reaches the user from the installed entry point
    (tmp_path / "bad.jsonl").write_text(GOOD + _line(timestamp="soon", hash_ids=[]) + "\n")
    result = run_cli("trace", "analyze", "bad.jsonl")
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.strip().splitlines() == [
        "error: bad.jsonl: line 2, timestamp: found 'soon'; expected milliseconds from 0 to 1e+15"
    ]
