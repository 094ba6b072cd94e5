"""Issue #14 item 15: the sample outputs of the README and of the docs pages (docs/*.md,
issue #24) are the real ones.

A sample is a fenced block right after a comment naming its command:

    <!-- sample: pdd-plan model show deepseek_v4_pro --kv-dtype fp8 -->
    ```
    $ pdd-plan model show deepseek_v4_pro --kv-dtype fp8     (optional: the command itself)
    ...the output...
    ```

Each is run in a fixed terminal (100 columns, no colour, no progress bars, from an empty
directory) and compared with the block line by line, trailing spaces stripped. The one
figure no two runs share, a solve's wall time ("solved in 5.3 s"), is masked on both sides.

After a change that moves a sample (a model, a table), rewrite the blocks of every file
with the real output and read the diff before committing it:

    .venv/bin/python tests/cli/test_readme_samples.py --update
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
DOCS = REPO / "docs"
COLUMNS = "100"  # the width the README's tables are printed at
SAMPLE = re.compile(r"<!-- sample: (?P<command>[^\n]+?) -->\n```[^\n]*\n(?P<body>.*?)^```$",
                    re.S | re.M)  # fmt: skip
# figures that differ from run to run, masked before comparing: (pattern, stand-in)
VOLATILE = ((re.compile(r"solved in \d+(?:\.\d+)? s"), "solved in <wall time> s"),)


def samples(text: str) -> list[re.Match]:
    return list(SAMPLE.finditer(text))


def sample_files() -> list[Path]:
    """The README and every docs page: the files whose samples are checked."""
    return [README, *sorted(DOCS.rglob("*.md"))]


def _cli() -> list[str]:
    exe = Path(sys.executable).with_name("pdd-plan")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "pdd_plan"]


def run_sample(command: str, cwd: Path) -> str:
    """The command's stdout in the README's terminal: 100 columns, plain text."""
    args = shlex.split(command)
    assert args[0] == "pdd-plan", f"a sample runs pdd-plan, not {args[0]!r}"
    env = {k: v for k, v in os.environ.items()
           if k not in ("PDD_PLAN_DEBUG", "PDD_PLAN_PROGRESS", "FORCE_COLOR")}  # fmt: skip
    env.update(COLUMNS=COLUMNS, NO_COLOR="1", TERM="dumb")
    done = subprocess.run([*_cli(), *args[1:]], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300)  # fmt: skip
    assert done.returncode == 0, f"{command}: exit {done.returncode}\n{done.stderr}"
    return done.stdout


def comparable(text: str) -> list[str]:
    """Lines without trailing spaces or trailing blank lines, volatile figures masked."""
    for pattern, stand_in in VOLATILE:
        text = pattern.sub(stand_in, text)
    lines = [line.rstrip() for line in text.splitlines()]
    while lines and not lines[-1]:
        lines.pop()
    return lines


def shown_output(command: str, body: str) -> str:
    """The block without its optional `$ command` line."""
    first, _, rest = body.partition("\n")
    return rest if first.strip() == f"$ {command}" else body


def update(text: str, cwd: Path) -> str:
    """`text` with every sample block holding its command's real output."""
    out, end = [], 0
    for m in samples(text):
        body = m["body"]
        prompt = body.partition("\n")[0] if shown_output(m["command"], body) != body else None
        real = "\n".join(line.rstrip() for line in run_sample(m["command"], cwd).splitlines())
        new_body = (f"{prompt}\n" if prompt else "") + real.rstrip("\n") + "\n"
        out += [text[end : m.start("body")], new_body]
        end = m.end("body")
    return "".join(out) + text[end:]


# --- the tests ------------------------------------------------------------------------


def test_every_readme_sample_is_the_real_output(tmp_path):
    # the first example (the default solve) is the README's
    assert "pdd-plan solve" in [m["command"] for m in samples(README.read_text())]
    checked = 0
    for path in sample_files():
        for m in samples(path.read_text()):
            real = run_sample(m["command"], tmp_path)
            assert comparable(shown_output(m["command"], m["body"])) == comparable(real), (
                f"{path.relative_to(REPO)}: sample `{m['command']}` is stale: rerun "
                "`.venv/bin/python tests/cli/test_readme_samples.py --update`"
            )
            checked += 1
    assert checked >= 3  # the README's solve, the docs' compare and model show at least


def test_the_docs_pages_are_searched_for_samples():
    pages = sample_files()
    assert pages[0] == README and len(pages) > 1
    assert all(p.suffix == ".md" and DOCS in p.parents for p in pages[1:])
    # a docs page's sample is found as the README's are
    found = {m["command"] for p in pages[1:] for m in samples(p.read_text())}
    assert "pdd-plan model show deepseek_v4_pro --kv-dtype fp8" in found, found


def test_a_stale_sample_is_caught_and_update_rewrites_it(tmp_path):
    readme = (
        "intro\n\n<!-- sample: pdd-plan catalog show h20_96g -->\n```\nold output\n```\n\n"
        "<!-- sample: pdd-plan catalog show wave_10g -->\n```\n$ pdd-plan catalog show "
        "wave_10g\nstale\n```\ntail\n"
    )
    (m1, m2) = samples(readme)
    assert (m1["command"], m1["body"]) == ("pdd-plan catalog show h20_96g", "old output\n")
    assert shown_output(m2["command"], m2["body"]) == "stale\n"
    fresh = update(readme, tmp_path)
    assert fresh.startswith("intro\n") and fresh.endswith("```\ntail\n")
    (n1, n2) = samples(fresh)
    assert comparable(n1["body"]) == comparable(run_sample(n1["command"], tmp_path))
    assert n2["body"].startswith("$ pdd-plan catalog show wave_10g\n")  # the prompt kept
    assert "h20_96g" in n1["body"] and "stale" not in fresh


def test_wall_times_are_masked_and_nothing_else():
    a = comparable("4 architectures solved in 5.3 s with HiGHS  \n\n")
    b = comparable("4 architectures solved in 12 s with HiGHS")
    assert a == b == ["4 architectures solved in <wall time> s with HiGHS"]
    assert comparable("cost $224.43/h") != comparable("cost $224.44/h")


if __name__ == "__main__":
    if sys.argv[1:] != ["--update"]:
        sys.exit("usage: python tests/cli/test_readme_samples.py --update")
    with tempfile.TemporaryDirectory() as folder:
        for path in sample_files():
            text = path.read_text()
            if samples(text):
                path.write_text(update(text, Path(folder)))
                print(f"rewrote {len(samples(text))} sample blocks in {path.relative_to(REPO)}")
