"""The sizing report's data: the plan, its sensitivity cases, the other architectures,
the explanation, built in a pool of processes (formatting lives in pdd_plan.report)."""
