"""Sweeps: a grid of scenario edits, each point solved or evaluated, in a process pool or
on Ray, journalled for resuming."""
