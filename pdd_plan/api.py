"""The Python API: the same calls as the CLI, returning the same JSON-ready dicts.

The package's face: it only gathers the stages' calls under one name (solving,
evaluating, explaining, the report's data and its sensitivity rules).
"""

from pdd_plan.plan.variants import (  # noqa: F401  (the API's names)
    GPU_PRICE_FACTORS,
    HIT_RATE_MEANS,
    HIT_RATE_RULE,
    LINE_PRICE_FACTORS,
    hit_rate_mapper,
    line_prices_usd_per_month,
    sensitivity_cases,
    with_gpu_prices,
    with_hit_rate_mean,
    with_line_prices,
)
from pdd_plan.stages.reporting.report_data import (  # noqa: F401  (the API's names)
    explanation,
    report_summary,
    sensitivity,
    sizing_report,
    sizing_report_data,
)
from pdd_plan.stages.solving.solve_json import (  # noqa: F401  (the API's names)
    SolveFiles,
    name_profile,
    no_plan_reason,
    policies_tried,
    solve_loaded,
)
from pdd_plan.stages.solving.solve_service import (  # noqa: F401  (the API's names)
    CASES_STAGE,
    DEFAULT_RESOLUTION,
    EXPLAIN_STAGE,
    SOLVE_STAGE,
    ArchSolve,
    Progress,
    compare_architectures,
    evaluate_plan,
    explain_scenario,
    infeasibility_reason,
    infeasible_answer,
    solve_choosing,
    solve_each,
    solve_scenario,
)
