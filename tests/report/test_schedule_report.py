"""The sizing report of a scenario with a load curve (issue #26 item 3/4): a section with the
schedule (what is committed, the cost and the saving, the table) and its chart."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from pdd_plan.loaders.catalog import Catalog
from pdd_plan.loaders.scenario import load_scenario
from pdd_plan.model.workload.workload import DEFAULT_RESOLUTION
from pdd_plan.stages.reporting.report_schedule import with_schedule

TINY = Path(__file__).resolve().parents[1] / "sweep" / "tiny.yaml"


@pytest.mark.slow  # a schedule and the peak's solve: about 2 s
def test_the_report_gets_the_schedule_section_and_chart(tmp_path):
    data = yaml.safe_load(TINY.read_text())
    data["workload"]["load_curve"] = [
        {"start_h": h, "duration_h": 6, "arrival_rate_per_s": r}
        for h, r in ((0, 10), (6, 20), (12, 40), (18, 20))
    ]
    path = tmp_path / "curve.yaml"
    path.write_text(yaml.safe_dump(data))
    catalog = Catalog()
    s = load_scenario(path, catalog)
    markdown, figures = with_schedule("# Report\n\n## Summary\n\nx\n", s, path, catalog,
                                      DEFAULT_RESOLUTION, 30.0)  # fmt: skip
    assert "## Over the load curve" in markdown
    assert "against sizing for the peak (40 req/s" in markdown
    assert markdown.count("| 0 h |") == 1 and "| 18 h |" in markdown  # a row a period
    (figure,) = figures
    assert figure.section == "Over the load curve" and figure.svg.startswith("<svg")
    assert "needed" in figure.svg and "reserved" in figure.svg


def test_a_scenario_without_a_curve_adds_nothing():
    catalog = Catalog()
    s = load_scenario(TINY, catalog)
    assert with_schedule("# R\n", s, TINY, catalog, DEFAULT_RESOLUTION, 30.0) == ("# R\n", [])
