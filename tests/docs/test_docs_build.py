"""Issue #24 item 2: the documentation is an MkDocs site built with `--strict` in the tests.

The build fails on any warning (a broken link or anchor, a page left out of the nav), and a
figure included from a file the benchmarks write (`--8<--` with `check_paths`) fails it when
that file is missing, so a page can never show a figure no benchmark wrote.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
RESULTS = REPO / "benchmarks" / "results"
INCLUDE = re.compile(r'^--8<-- "(?P<path>[^":]+)(?::[^"]*)?"$', re.M)


def build(root: Path, site: Path) -> subprocess.CompletedProcess:
    env = os.environ | {"NO_MKDOCS_2_WARNING": "1"}  # Material's banner, not a build warning
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(root / "mkdocs.yml"),
         "-d", str(site)],
        cwd=root, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip


def site_copy(tmp_path: Path) -> Path:
    """The site's sources (config, pages, results files, the assumptions table) in a folder
    of their own."""
    root = tmp_path / "repo"
    shutil.copytree(REPO / "docs", root / "docs")
    shutil.copytree(RESULTS, root / "benchmarks" / "results")
    shutil.copy(REPO / "mkdocs.yml", root)
    (root / "pdd_plan" / "report").mkdir(parents=True)
    shutil.copy(REPO / "pdd_plan" / "report" / "assumptions.md", root / "pdd_plan" / "report")
    return root


def test_the_site_builds_strict_without_a_warning(tmp_path):
    done = build(REPO, tmp_path / "site")
    assert done.returncode == 0, done.stderr[-4000:]
    assert "WARNING" not in done.stderr, done.stderr[-4000:]
    assert (tmp_path / "site" / "index.html").is_file()
    # the plots the benchmarks drew are served, not copied into docs/
    assert (tmp_path / "site" / "figures" / "bathtub.png").read_bytes() == (
        RESULTS / "bathtub.png"
    ).read_bytes()


@pytest.mark.slow
def test_a_missing_results_file_or_a_broken_link_fails_the_build(tmp_path):
    root = site_copy(tmp_path)
    (root / "benchmarks" / "results" / "campaign.md").unlink()
    missing = build(root, tmp_path / "site1")
    assert missing.returncode != 0 and "campaign.md" in missing.stderr
    shutil.copy(RESULTS / "campaign.md", root / "benchmarks" / "results")
    page = root / "docs" / "index.md"
    page.write_text(page.read_text() + "\n[gone](no-such-page.md)\n")
    broken = build(root, tmp_path / "site2")
    assert broken.returncode != 0 and "no-such-page.md" in broken.stderr


def test_every_results_file_is_shown_and_every_include_is_a_results_file():
    included = {
        (REPO / m["path"]).resolve()
        for page in (REPO / "docs").rglob("*.md")
        for m in INCLUDE.finditer(page.read_text())
    }
    assumptions = (REPO / "pdd_plan" / "report" / "assumptions.md").resolve()  # the one table
    assert included and all(RESULTS in p.parents for p in included - {assumptions}), included
    written = {p.resolve() for p in RESULTS.glob("*.md")}
    assert written <= included, sorted(p.name for p in written - included)
