"""Solving, evaluating and explaining a scenario: the architecture choice, infeasible
and unproven answers, the solve's JSON and memo, the KV-layout verdict, confidence margins."""
