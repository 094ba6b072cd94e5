"""Peak memory of `pdd-plan trace analyze` on a large trace of unique blocks.

Generates (in a temporary directory) a Mooncake JSONL trace of about `--mb` megabytes in
which no block repeats (the worst case for an unlimited cache: it keeps every block), runs
`pdd-plan trace analyze` on it with a small `--cache-capacity`, and prints the child's peak
resident memory (getrusage of the children after it exits) and the wall time.

    python benchmarks/memory_trace.py                 # ~200 MB, --cache-capacity 1M
    python benchmarks/memory_trace.py --mb 50 --cache-capacity 1M,unlimited
    python benchmarks/memory_trace.py --pythonpath /tmp/old   # another checkout's code
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BLOCKS_PER_REQUEST = 100
BLOCK_TOKENS = 512
FIRST_BLOCK_ID = 10_000_000  # 8-digit ids: about 1 KB per request line


def write_trace(path: Path, target_bytes: int) -> int:
    """Requests one second apart, each with BLOCKS_PER_REQUEST never-seen blocks."""
    requests, written, next_id = 0, 0, FIRST_BLOCK_ID
    with path.open("w", encoding="utf-8") as handle:
        while written < target_bytes:
            ids = ", ".join(map(str, range(next_id, next_id + BLOCKS_PER_REQUEST)))
            line = (
                f'{{"timestamp": {requests * 1000}, "input_length": '
                f'{BLOCKS_PER_REQUEST * BLOCK_TOKENS}, "output_length": 200, '
                f'"hash_ids": [{ids}]}}\n'
            )
            handle.write(line)
            written += len(line)
            next_id += BLOCKS_PER_REQUEST
            requests += 1
    return requests


def run(trace: Path, capacity: str, pythonpath: str | None) -> tuple[int, float, float]:
    """(exit code, wall seconds, peak RSS of the child in MiB)."""
    env = dict(os.environ)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    command = [sys.executable, "-m", "pdd_plan", "trace", "analyze", str(trace)]
    command += ["--cache-capacity", capacity, "--format", "json"]
    start = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    wall_s = time.perf_counter() - start
    if done.returncode != 0:
        print(done.stderr.strip()[-2000:], file=sys.stderr)
    peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss  # KiB on Linux
    return done.returncode, wall_s, peak_kib / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mb", type=float, default=200, help="trace size in megabytes")
    parser.add_argument("--cache-capacity", default="1M", help="passed to trace analyze")
    parser.add_argument("--pythonpath", default=None, help="run the pdd_plan found here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        trace = Path(folder) / "unique_blocks.jsonl"
        requests = write_trace(trace, int(args.mb * 1e6))
        size_mb = trace.stat().st_size / 1e6
        print(
            f"trace: {size_mb:,.0f} MB, {requests:,} requests, "
            f"{requests * BLOCKS_PER_REQUEST:,} distinct blocks"
        )
        code, wall_s, peak_mib = run(trace, args.cache_capacity, args.pythonpath)
        print(
            f"trace analyze --cache-capacity {args.cache_capacity}: exit {code}, "
            f"wall {wall_s:.1f} s, peak RSS {peak_mib:,.0f} MiB"
        )


if __name__ == "__main__":
    main()
