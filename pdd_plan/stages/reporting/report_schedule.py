"""The sizing report's schedule (issue #26): on a scenario with a load curve, the plan
over the curve (`pdd-plan schedule`) as a section of the report and its chart; the rest
of the report is the single-rate plan at the curve's peak."""

from __future__ import annotations

from pdd_plan.report.html import Figure
from pdd_plan.report.schedule_chart import SECTION, schedule_markdown, schedule_svg

CAPTION = (
    "The schedule over the load curve: the offered rate and the cost per hour (top), and "
    "per role the reserved, on-demand and spot instances running against those needed."
)


def with_schedule(markdown: str, s, path, catalog, resolution, time_limit_s):
    """The report's Markdown with the schedule section, and its figures (none without a
    curve)."""
    if s.workload.load_curve is None:
        return markdown, []
    from pdd_plan.stages.solving.schedule_service import schedule_scenario

    result, files = schedule_scenario(path, None, catalog, resolution, time_limit_s)
    if files is None:
        return markdown + f"\n## {SECTION}\n\nNo schedule: {result['reason']}.\n", []
    section = schedule_markdown(result)
    return markdown.rstrip("\n") + "\n\n" + section, [
        Figure("schedule", schedule_svg(result), CAPTION, SECTION)
    ]
