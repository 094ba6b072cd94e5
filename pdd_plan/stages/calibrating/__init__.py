"""Calibration: engine profiles fitted to step times, serving benchmarks and observed
operating points, their physical checks, and `validate`'s accuracy table."""
