"""`report` on a scenario with no plan names the limit and by how much, as `solve` does
(issue #22, point 4: every infeasible answer), instead of pointing at `solve`."""

from __future__ import annotations

import re

import pytest
import yaml

pytestmark = pytest.mark.slow  # every test here is slow (pyproject.toml: markers)


def test_report_without_a_plan_names_the_limit_and_the_figure(tmp_path, run_cli):
    scenario = {
        "name": "tight",
        "model": "llama_3_1_70b",
        "datacenters": [{"id": "dc_a", "roles": ["prefill", "decode", "colocated"],
                         "gpus": [{"gpu": "h100_sxm", "max_gpus": 64}]}],
        "workload": {"arrival_rate_per_s": 2,
                     "input_tokens": {"kind": "fixed", "value": 8000},
                     "output_tokens": {"kind": "fixed", "value": 100},
                     "prefix_hit_rate": {"kind": "fixed", "value": 0}},
        # a 0.05 s TTFT: 8,000 tokens of Llama-3.1-70B prefill take far longer on H100
        "sla": {"ttft_p90_s": 0.05, "tpot_p90_ms": 100},
    }  # fmt: skip
    path = tmp_path / "tight.yaml"
    path.write_text(yaml.safe_dump(scenario))
    for extra in ([], ["--architecture", "idc_pd"]):
        done = run_cli("report", str(path), "-o", str(tmp_path / "r.html"), *extra)
        assert done.returncode == 3, done.stderr
        line = done.stderr.strip().splitlines()[-1]
        assert "sla.ttft_p90_s" in line and re.search(r"needs [0-9.]+ s", line), line
        assert not (tmp_path / "r.html").exists()
