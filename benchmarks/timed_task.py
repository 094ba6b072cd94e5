"""A pool task wrapped to log its start, end and CPU (benchmarks/report_timeline.py)."""

from __future__ import annotations

import json
import os
import time

ENV = "PDD_PLAN_TASK_LOG"


def _name(fn) -> tuple[str, object]:
    """The task's name and, for fork_pool's `_call(i)` or a sweep point, what it works on."""
    name = getattr(fn, "__qualname__", type(fn).__name__)
    return name, None


class Timed:
    def __init__(self, fn, log_path: str):
        self.fn, self.log_path = fn, log_path

    def __call__(self, *args, **kwargs):
        start, cpu = time.perf_counter(), time.process_time()
        try:
            return self.fn(*args, **kwargs)
        finally:
            arg = next((a for a in args if isinstance(a, int | str)), None)
            entry = {"task": _name(self.fn)[0], "arg": arg, "pid": os.getpid(),
                     "start": start, "end": time.perf_counter(),
                     "cpu_s": time.process_time() - cpu}  # fmt: skip
            with open(self.log_path, "a") as f:  # one short line: an atomic append
                f.write(json.dumps(entry) + "\n")
