"""Bug hunt (round 21, helper hb): `--catalog-dir` overlays found wrong by fuzzing.

1. A GPU entry with a peak of 1e-5 TFLOP/s (a slip of units, or a fuzzed value) made
   `evaluate` end in a traceback (scipy's brentq: "f(a) and f(b) must have different
   signs"): a decode step of days is past the range the TPOT percentile search brackets.
   Bad input never gives a traceback (docs/guarantees.md); the catalog now has a physical floor for
   peak dense compute, 1 TFLOP/s (a hundredth of the slowest shipped GPU), so the file is
   refused in one line per figure naming file, key, value and range.
2. An overlay whose `models` (or `gpus`) is a file, not a folder, was accepted and changed
   nothing, silently; a folder with none of the parts is already refused for that reason
   ("a mistyped folder would otherwise change nothing").
"""

from __future__ import annotations

import pytest
import yaml

from pdd_plan.loaders.catalog import catalog_dir
from tests.hardening.conftest import TINY, assert_one_error_line

PLAN = {"plan": {"architecture": "colocated", "instances": [
    {"role": "colocated", "datacenter": "dc_a", "gpu": "h100_sxm", "gpus_per_instance": 1,
     "count": 2}]}}  # fmt: skip


def overlay_h100(folder, **values) -> None:
    entry = yaml.safe_load((catalog_dir() / "gpus" / "h100_sxm.yaml").read_text())
    for key, value in values.items():
        entry[key]["value"] = value
    (folder / "gpus").mkdir(parents=True)
    (folder / "gpus" / "h100_sxm.yaml").write_text(yaml.safe_dump(entry))


@pytest.mark.slow
@pytest.mark.parametrize("tflops", [1e-5, 0.5])
def test_a_peak_below_1_tflops_is_refused_not_a_traceback(cli, tmp_path, tflops):
    overlay_h100(tmp_path / "cat", bf16_dense_tflop_per_s=tflops)
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(TINY))
    (tmp_path / "p.yaml").write_text(yaml.safe_dump(PLAN))
    done = cli("--catalog-dir", "cat", "evaluate", "s.yaml", "p.yaml")
    errors = [x for x in done.stderr.splitlines() if not x.startswith("note: ")]
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert errors == [f"error: {tmp_path / 'cat' / 'gpus' / 'h100_sxm.yaml'}: "
                      f"bf16_dense_tflop_per_s.value: found {tflops!r}; expected a number "
                      ">= 1 and <= 1e+09"], errors  # fmt: skip


def test_a_peak_of_1_tflops_is_a_gpu(cli, tmp_path):
    """The floor itself is allowed: a slow GPU is evaluated (saturated or not), exit 0."""
    overlay_h100(tmp_path / "cat", bf16_dense_tflop_per_s=1, fp8_dense_tflop_per_s=1)
    done = cli("--catalog-dir", "cat", "catalog", "show", "h100_sxm")
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("part", ["models", "gpus"])
def test_an_overlay_part_that_is_a_file_is_refused(cli, tmp_path, part):
    (tmp_path / "cat").mkdir()
    (tmp_path / "cat" / part).write_text("id: mine\n")
    line = assert_one_error_line(cli("--catalog-dir", "cat", "catalog", "list"), 2)
    expected = f"error: cat/{part}: found a file, not a folder; expected a folder of "
    assert line.startswith(expected), line
