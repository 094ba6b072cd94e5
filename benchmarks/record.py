"""Run a benchmark and keep what it printed as the results file the docs include.

    python benchmarks/record.py NAME [--as FILE] [--markdown] [-- ARGS...]

Runs `python benchmarks/NAME.py ARGS` from the repository root and writes
benchmarks/results/FILE.md (default NAME.md): the benchmark's title (the first paragraph of
its docstring), the command, the tool's version and commit, the date, the machine (CPUs and
load average before and after: timings on a shared machine are only as steady as it was)
and the wall time, then what the benchmark printed on stdout: as it is with --markdown
(the benchmark prints Markdown), else in a text block. The documentation includes these
files (`--8<--` in docs/*.md, with `check_paths`), so a timing or a table in the docs is
what the last run printed, never a figure typed by hand. Its first line is the title and
its third the provenance, so a page with a heading of its own includes it from line 3
(`--8<-- "benchmarks/results/NAME.md:3:"`). The file is written whole or not at all, and
not at all when the benchmark fails (its exit status is passed on).
"""

from __future__ import annotations

import argparse
import ast
import datetime
import os
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
RESULTS = HERE / "results"


def title(script: Path) -> str:
    """The first paragraph of the benchmark's docstring, read without importing it."""
    doc = ast.get_docstring(ast.parse(script.read_text())) or script.stem
    return " ".join(doc.strip().split("\n\n")[0].split()).rstrip(".")


def commit() -> str:
    """HEAD's short hash, marked when pdd_plan or benchmarks differ from it."""

    def git(*args: str) -> str:
        done = subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True)
        return done.stdout.strip()

    head = git("rev-parse", "--short", "HEAD") or "unknown"
    dirty = git("status", "--porcelain", "--", "pdd_plan", "benchmarks/*.py")
    return head + ("+changes" if dirty else "")


def version() -> str:
    done = subprocess.run([sys.executable, "-c", "import pdd_plan; print(pdd_plan.__version__)"],
                          cwd=REPO, capture_output=True, text=True)  # fmt: skip
    return done.stdout.strip() or "unknown"


def load() -> str:
    return " / ".join(f"{x:.2f}" for x in os.getloadavg())


def page(name: str, args: list[str], printed: str, markdown: bool, facts: dict) -> str:
    command = shlex.join(["python", f"benchmarks/{name}.py", *args])
    head = (
        f"# {facts['title']}\n\n"
        f"`{command}`: pdd-plan {facts['version']}, commit {facts['commit']}, "
        f"{facts['date']}; {os.cpu_count()} CPUs, load average (1 / 5 / 15 min) "
        f"{facts['load_before']} before and {facts['load_after']} after; "
        f"{facts['wall_s']:.0f} s of wall time. Written by `{facts['recorded_by']}` (do not "
        "edit by hand: run it again).\n\n"
    )
    body = printed.rstrip("\n")
    return head + (body + "\n" if markdown else f"```text\n{body}\n```\n")


def write_whole(path: Path, text: str) -> None:
    """A temporary file beside the target, renamed over it when complete."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".record-", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def main(argv: list[str]) -> int:
    cut = argv.index("--") if "--" in argv else len(argv)
    ours, theirs = argv[:cut], argv[cut + 1 :]
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("name", help="a benchmark: benchmarks/NAME.py")
    parser.add_argument("--as", dest="out", help="results file name (default: NAME)")
    parser.add_argument("--markdown", action="store_true", help="its output is Markdown")
    args = parser.parse_args(ours)
    script = HERE / f"{args.name}.py"
    if not script.is_file() or args.name == "record":
        parser.error(f"no benchmark {script}")
    facts = {"title": title(script), "version": version(), "commit": commit(),
             "date": datetime.date.today().isoformat(), "load_before": load(),
             "recorded_by": shlex.join(["python", "benchmarks/record.py", *argv])}  # fmt: skip
    start = time.perf_counter()
    done = subprocess.run([sys.executable, str(script), *theirs], cwd=REPO,
                          stdout=subprocess.PIPE, text=True)  # fmt: skip
    facts |= {"wall_s": time.perf_counter() - start, "load_after": load()}
    sys.stdout.write(done.stdout)
    if done.returncode != 0:
        print(f"record: {script.name} exited {done.returncode}; nothing written", file=sys.stderr)
        return done.returncode
    target = RESULTS / f"{args.out or args.name}.md"
    write_whole(target, page(args.name, theirs, done.stdout, args.markdown, facts))
    print(f"record: wrote {target.relative_to(REPO)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
