"""The workload: length and prefix-hit distributions, discretised into request-class rows."""
