"""Bug hunt (round 21, helper hb): scenario files found mis-read by structural fuzzing.

1. A raw control character in a YAML file (a BEL or an ESC pasted into a description) was
   `found invalid YAML (ReaderError)`: no line, no column, no character, where every other
   syntax error names its line and column (docs/guarantees.md: one line naming the file, the place,
   the value found and the value expected).
2. YAML 1.1's base-60 numbers: `arrival_rate_per_s: 1:30` was read as 90 req/s, silently,
   and `name: 12:30` was refused as "found 750". The loader already reads implicit types as
   YAML 1.2 does (`1e3` a number, `2024-01-01` a text); in YAML 1.2 `1:30` is the text
   `1:30`, so a number key now says it found '1:30', and a name keeps what the file says.
"""

from __future__ import annotations

import copy

import yaml

from tests.hardening.conftest import TINY, assert_one_error_line


def test_a_raw_control_character_is_named_with_its_line_and_column(cli, tmp_path):
    text = yaml.safe_dump(TINY) + "description: bell\x07here\n"
    path = tmp_path / "s.yaml"
    path.write_text(text)
    line_no = text.count("\n")  # the description is the last line
    column = len("description: bell") + 1
    line = assert_one_error_line(cli("scenario", "validate", path), 2)
    assert line.startswith(f"error: {path}: line {line_no}, column {column}: found the "
                           "character U+0007"), line  # fmt: skip


def test_base_60_is_text_not_a_number(cli, tmp_path):
    text = yaml.safe_dump(TINY).replace("arrival_rate_per_s: 2", "arrival_rate_per_s: 1:30")
    assert "1:30" in text
    path = tmp_path / "s.yaml"
    path.write_text(text)
    found = "workload.arrival_rate_per_s: found '1:30'; expected a number"
    assert_one_error_line(cli("scenario", "validate", path), 2, found)


def test_a_clock_time_name_is_kept_as_written(cli, tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(TINY).replace("name: tiny", "name: 12:30"))
    done = cli("scenario", "validate", path, "--format", "json")
    assert done.returncode == 0, done.stderr
    assert '"12:30"' in done.stdout


def test_a_bin_that_is_no_mapping_is_one_problem_not_also_a_bad_sum(cli, tmp_path):
    """TINY's hit-rate bins share 0.05 + 0.05 + 0.1 + 0.8 = 1. A bin written as a scalar
    is one problem; its share is unknown, so "shares summing to 0.95" was a second line
    about the same mistake."""
    scenario = copy.deepcopy(TINY)
    scenario["workload"]["prefix_hit_rate"]["bins"][0] = 5
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(scenario))
    found = "workload.prefix_hit_rate.bins[0]: found 5; expected a mapping"
    assert_one_error_line(cli("scenario", "validate", path), 2, found)
