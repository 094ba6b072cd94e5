"""Bug hunt (round 21, helper hb): trace rows found wrong by fuzzing `trace analyze`.

An Azure CSV timestamp written as a date before 1970 (`0001-01-01 00:00:00`) is a negative
number of seconds since the epoch; it was accepted (exit 0), although docs/guarantees.md promises
"a timestamp outside 0-1e12 s is one error naming the line", as the same instant written
in seconds (`-62135596800`) already is.
"""

from __future__ import annotations

import pytest

from tests.hardening.conftest import assert_one_error_line

HEADER = "TIMESTAMP,ContextTokens,GeneratedTokens\n"


@pytest.mark.parametrize("stamp", ["0001-01-01 00:00:00", "1969-12-31 23:59:59.5",
                                   "-62135596800"])  # fmt: skip
def test_a_time_before_the_epoch_is_one_error_naming_the_line(cli, tmp_path, stamp):
    trace = tmp_path / "t.csv"
    trace.write_text(HEADER + "2023-11-16 18:17:03,100,10\n" + f"{stamp},100,10\n")
    line = assert_one_error_line(cli("trace", "analyze", trace), 2)
    assert line.startswith(f"error: {trace}: line 3, TIMESTAMP: found '{stamp}'; "), line


def test_the_epoch_itself_is_a_time(cli, tmp_path):
    """0 s is inside the documented 0-1e12 s: 1970-01-01 00:00:00 is read, not refused."""
    trace = tmp_path / "t.csv"
    trace.write_text(HEADER + "1970-01-01 00:00:00,100,10\n1970-01-01 00:00:10,100,10\n")
    done = cli("trace", "analyze", trace, "--format", "json")
    assert done.returncode == 0, done.stderr
    assert '"span_s": 10.0' in done.stdout
