"""Issue #10, items 8, 9 and 22: input paths, special files and sizes.

Every input file (scenario, plan, Hugging Face config) is opened by one bounded reader:
a path the system cannot open is one error line, a non-regular file (a FIFO, a link to
one) is refused without waiting on it, a file over its kind's cap or a list of more than
10,000 items is refused fast, and a long `bins` distribution is coarsened for the
optimiser, with a warning.
"""

from __future__ import annotations

import errno
import json
import os
import threading
import time
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest
import yaml

from tests.hardening.conftest import (
    REPO,
    assert_one_error_line,
    changed,
    checksums,
)

IS_ROOT = os.geteuid() == 0
ROOT_REASON = "running as root: permission bits are not enforced, so mode 000 reads fine"
DEFAULT_SCENARIO = REPO / "scenarios" / "default.yaml"
PLAN = {
    "plan": {
        "architecture": "idc_pd",
        "instances": [
            {"role": "prefill", "datacenter": "dc_a", "gpu": "h100_sxm",
             "gpus_per_instance": 8, "count": 1},
            {"role": "decode", "datacenter": "dc_a", "gpu": "h100_sxm",
             "gpus_per_instance": 8, "count": 1},
        ],
    }
}  # fmt: skip


def default_scenario() -> dict:
    return yaml.safe_load(DEFAULT_SCENARIO.read_text(encoding="utf-8"))


@contextmanager
def fifo_writer(path: Path, chunk: bytes = b"x" * 65536):
    """Keep writing into the FIFO at `path` whenever a reader opens it (non-blocking, so
    the thread never hangs the test), until the block ends."""
    stop = threading.Event()

    def feed():
        while not stop.is_set():
            try:
                fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
            except OSError as exc:  # ENXIO: no reader yet
                if exc.errno != errno.ENXIO:
                    return
                time.sleep(0.01)
                continue
            try:
                while not stop.is_set():
                    try:
                        os.write(fd, chunk)
                    except BlockingIOError:
                        time.sleep(0.001)
            except OSError:  # the reader went away
                pass
            finally:
                os.close(fd)

    thread = threading.Thread(target=feed, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=5)


# ---- item 8: paths the system cannot open -------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize(
    "args_for",
    [
        lambda p: ("scenario", "validate", p),
        lambda p: ("evaluate", "default", p),
        lambda p: ("model", "import", p),
    ],
    ids=["scenario", "plan", "hf-config"],
)
def test_a_300_character_name_is_one_line(cli, tmp_path, args_for):
    name = "n" * 300 + ".yaml"  # a component over the 255 bytes a file system allows
    before = checksums(tmp_path)
    result = cli(*args_for(name), timeout=60)
    assert_one_error_line(result, 2, "a path too long", "305 characters")
    assert changed(before, checksums(tmp_path)) == set()


def test_a_path_over_4096_characters_is_one_short_line(cli, tmp_path):
    path = "d/" * 2100 + "s.yaml"  # 4,206 characters: over PATH_MAX
    result = cli("scenario", "validate", path, timeout=60)
    line = assert_one_error_line(result, 2, "a path too long", "4,206 characters")
    assert len(line) < 600  # the path is shortened, the line stays readable


@pytest.mark.slow
def test_a_path_through_a_regular_file_is_one_line(cli, tmp_path):
    # ENOTDIR: the same error path a mode-000 directory takes, reachable as root
    (tmp_path / "plain.yaml").write_text("name: x\n")
    before = checksums(tmp_path)
    cases = (("scenario", "validate", "plain.yaml/s.yaml"), ("evaluate", "default", "plain.yaml/p"))
    for args in cases:
        result = cli(*args, timeout=60)
        assert_one_error_line(result, 2, "plain.yaml/", "not a directory")
    assert changed(before, checksums(tmp_path)) == set()


@pytest.mark.skipif(IS_ROOT, reason=ROOT_REASON)
def test_a_scenario_in_a_mode_000_directory_is_one_line(cli, tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir()
    (locked / "s.yaml").write_text(DEFAULT_SCENARIO.read_text())
    before = checksums(tmp_path)
    locked.chmod(0)
    try:
        result = cli("scenario", "validate", "locked/s.yaml", timeout=60)
    finally:
        locked.chmod(0o755)
    assert_one_error_line(result, 2, "locked/s.yaml", "permission denied")
    assert changed(before, checksums(tmp_path)) == set()


@pytest.mark.skipif(IS_ROOT, reason=ROOT_REASON)
def test_a_mode_000_plan_is_one_line(cli, tmp_path):
    plan = tmp_path / "p.yaml"
    plan.write_text(yaml.safe_dump(PLAN))
    plan.chmod(0)
    try:
        result = cli("evaluate", "default", "p.yaml", timeout=60)
    finally:
        plan.chmod(0o644)
    assert_one_error_line(result, 2, "p.yaml", "permission denied")


# ---- item 9: special files are refused, never read or waited on ----------------------------


@pytest.mark.slow
@pytest.mark.parametrize(
    "args_for",
    [
        lambda p: ("scenario", "validate", p),
        lambda p: ("evaluate", "default", p),
        lambda p: ("model", "import", p),
    ],
    ids=["scenario", "plan", "hf-config"],
)
@pytest.mark.parametrize("through_link", [False, True], ids=["fifo", "link-to-fifo"])
def test_a_fifo_is_refused_without_blocking(cli, tmp_path, args_for, through_link):
    fifo = tmp_path / "pipe.yaml"
    os.mkfifo(fifo)
    name = fifo.name
    if through_link:
        (tmp_path / "link.yaml").symlink_to(fifo)
        name = "link.yaml"
    before = checksums(tmp_path)
    with fifo_writer(fifo):  # endless data: a reader without a cap would never finish
        result = cli(*args_for(name), timeout=60)
    assert_one_error_line(result, 2, name, "named pipe", "regular file")
    assert changed(before, checksums(tmp_path)) == set()


def test_a_fifo_with_no_writer_is_refused_too(cli, tmp_path):
    os.mkfifo(tmp_path / "s.yaml")  # opening it for reading would block forever
    result = cli("scenario", "validate", "s.yaml", timeout=60)
    assert_one_error_line(result, 2, "s.yaml", "named pipe")


# ---- item 22: sizes --------------------------------------------------------------------------


def test_an_18_mb_scenario_is_refused_by_its_size_fast(cli, tmp_path):
    big = tmp_path / "big.yaml"
    with big.open("w") as handle:  # 9 million list items, as in the issue
        handle.write("name: big\nworkload:\n  values:\n")
        handle.write("  - 1\n" * 3_000_000)
    size = big.stat().st_size
    start = time.perf_counter()
    result = cli("scenario", "validate", "big.yaml", timeout=60)
    elapsed_s = time.perf_counter() - start
    assert_one_error_line(result, 2, "big.yaml", f"{size:,} bytes", "at most 1 MiB")
    assert elapsed_s < 30, elapsed_s  # refused on its size, before any parsing


def test_a_list_of_more_than_10000_items_is_refused_before_it_is_built(cli, tmp_path):
    data = default_scenario()
    data["workload"]["input_tokens"] = {"kind": "empirical", "values": [1000] * 10_001}
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(data, default_flow_style=None))
    before = checksums(tmp_path)
    result = cli("scenario", "validate", "s.yaml", timeout=60)
    assert_one_error_line(result, 2, "s.yaml", "a list of 10,001 items", "at most 10,000")
    assert changed(before, checksums(tmp_path)) == set()


@pytest.mark.slow
def test_a_list_of_10000_items_is_accepted(cli, tmp_path):
    data = default_scenario()
    data["workload"]["input_tokens"] = {"kind": "empirical", "values": [1000] * 10_000}
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(data, default_flow_style=None))
    result = cli("scenario", "validate", "s.yaml", timeout=60)
    assert result.returncode == 0, result.stderr


@pytest.mark.slow
def test_a_plan_file_over_its_cap_is_refused(cli, tmp_path):
    text = yaml.safe_dump(PLAN) + "# padding\n" * 30_000  # 300 KB of comments
    (tmp_path / "p.yaml").write_text(text)
    result = cli("evaluate", "default", "p.yaml", timeout=60)
    assert_one_error_line(result, 2, "p.yaml", f"{len(text):,} bytes", "at most 256 KiB")


def ten_thousand_bins_scenario(path: Path) -> float:
    """The default scenario with a 10,000-bin uniform hit rate; its mean, by hand 0.5."""
    data = default_scenario()
    n = 10_000
    data["workload"]["prefix_hit_rate"] = {
        "kind": "bins",
        "bins": [{"low": i / n, "high": (i + 1) / n, "share": 1 / n} for i in range(n)],
    }
    path.write_text(yaml.safe_dump(data, default_flow_style=None, width=100))
    return 0.5


@pytest.mark.slow
def test_ten_thousand_bins_solve_with_a_coarsening_warning(cli, tmp_path):
    ten_thousand_bins_scenario(tmp_path / "bins.yaml")
    before = checksums(tmp_path)
    start = time.perf_counter()
    result = cli(
        "solve", "bins.yaml", "--architecture", "idc_pd", "--time-limit", "1",
        "--format", "json", timeout=120,
    )  # fmt: skip
    elapsed_s = time.perf_counter() - start
    assert result.returncode == 0, result.stderr
    warnings = json.loads(result.stdout)["metrics"]["warnings"]
    merged = [w for w in warnings if w.startswith("workload.prefix_hit_rate: 10,000 bins")]
    assert len(merged) == 1 and "merged into 24" in merged[0], warnings
    assert elapsed_s < 90, elapsed_s  # was 91-120 s for pdd before the merge
    assert changed(before, checksums(tmp_path)) == set()


def test_merged_bins_keep_the_mean_and_the_asked_points():
    from pdd_plan.model.workload.workload import Bins

    rng = np.random.default_rng(7)
    lows = np.sort(rng.uniform(0, 1, 10_000))
    highs = np.minimum(lows + rng.uniform(0, 0.01, 10_000), 1.0)
    shares = rng.uniform(0.5, 1.5, 10_000)
    shares /= shares.sum()
    dist = Bins(tuple(lows), tuple(highs), tuple(shares))
    values, weights = dist.discretise(24)
    assert len(values) == 24 and weights.sum() == pytest.approx(1.0)
    # each bin's mean is its midpoint (uniform inside): the mean by hand
    assert np.dot(values, weights) == pytest.approx(np.dot((lows + highs) / 2, shares), rel=1e-12)
    assert np.all(np.diff(values) > 0)  # strata in order, none empty
    few = Bins((0.0, 0.5), (0.5, 1.0), (0.5, 0.5)).discretise(24)[0]
    assert len(few) == 24  # a short distribution keeps its points per bin, as before
