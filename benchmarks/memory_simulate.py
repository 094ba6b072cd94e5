"""Peak memory and wall time of `pdd-plan simulate` as a child process.

    python benchmarks/memory_simulate.py [--requests 2000000] [--trace-out] [--seed 1]

Runs `pdd-plan simulate pdd-paper scenarios/plans/pdd-paper-pdd.yaml --requests N
--format json` (with `--trace-out` a per-request CSV too, written in a temporary folder and
deleted after) and prints the child's peak resident memory (the kernel's high-water mark
from wait4), its wall time, and the bytes per simulated request.

Measured (2 shared cores, loaded, so the wall times are long): 2,000,000 requests 0.84
GB peak (421 B/request; 229 s), 500,000 requests 0.31 GB (617 B/request): about 356 B per
request on top of ~130 MB fixed (the interpreter, numpy, one chunk of 65,536 events), so
the allowed 10,000,000 requests peak near 3.7 GB. With --trace-out: 2,000,000 requests
0.94 GB (a 411 MB CSV), 500,000 0.42 GB; the CSV's chunks add ~100 MB whatever the size.
What grows with the run is numpy columns (the trace's per-request times, the
decode engine's records) and the step segments (40 bytes each, about two a request).

Before (same machine): 2,000,000 requests 2.07 GB peak (1,034 B/request), 2.17 GB with
--trace-out (a 411 MB CSV); the decode engine's heap held every arrival event up front
(~390 B each) and its step segments, dicts and lists were Python objects per request.
At 500,000 with --trace-out: 853 MB when the CSV was built as one string, 565 MB streamed.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def command(requests: int, seed: int, trace: Path | None) -> list[str]:
    exe = Path(sys.executable).with_name("pdd-plan")
    cli = [str(exe)] if exe.exists() else [sys.executable, "-m", "pdd_plan"]
    args = ["simulate", "pdd-paper", str(REPO / "scenarios/plans/pdd-paper-pdd.yaml"),
            "--requests", str(requests), "--seed", str(seed), "--format", "json"]  # fmt: skip
    return cli + args + (["--trace-out", str(trace)] if trace else [])


def measure(cmd: list[str]) -> tuple[int, float, int, bytes]:
    """(exit code, wall seconds, peak RSS bytes, stderr) of one child run."""
    start = time.perf_counter()
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err, cwd=REPO)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        wall_s = time.perf_counter() - start
        err.seek(0)
        return proc.returncode, wall_s, usage.ru_maxrss * 1024, err.read()  # Linux: KiB


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=2_000_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--trace-out", action="store_true", help="also write the trace CSV")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        trace = Path(folder) / "trace.csv" if args.trace_out else None
        rc, wall_s, peak_bytes, err = measure(command(args.requests, args.seed, trace))
        size = trace.stat().st_size if trace and trace.exists() else 0
    if rc != 0:
        sys.exit(f"simulate failed (exit {rc}): {err.decode(errors='replace')[-2000:]}")
    note = f"; trace CSV {size / 1e6:,.0f} MB" if trace else ""
    print(f"{args.requests:,} requests of pdd-paper (PDD plan){' with --trace-out' * bool(trace)}: "
          f"peak RSS {peak_bytes / 1e9:.2f} GB ({peak_bytes / args.requests:,.0f} B/request), "
          f"wall {wall_s:.1f} s{note}")  # fmt: skip


if __name__ == "__main__":
    main()
