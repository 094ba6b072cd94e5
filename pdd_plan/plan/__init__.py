"""The optimiser: candidates -> MILP (PuLP + HiGHS) -> plans verified with evaluate."""
