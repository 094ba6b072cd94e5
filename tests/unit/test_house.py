"""The house rules a reader can rely on (issue #24 item 5): every Python file of the package,
its tests and its benchmarks is under 400 lines, so each fits one reading."""

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
MAX_LINES = 400


def long_files(root: Path) -> list[str]:
    return sorted(
        f"{p.relative_to(root)}: {n} lines"
        for folder in ("pdd_plan", "tests", "benchmarks")
        for p in (root / folder).rglob("*.py")
        if (n := len(p.read_text(encoding="utf-8").splitlines())) >= MAX_LINES
    )


def test_every_python_file_is_under_400_lines():
    assert long_files(REPO) == []


def test_the_count_sees_a_long_file(tmp_path):
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "long.py").write_text("x = 1\n" * MAX_LINES)
    (tmp_path / "tests" / "short.py").write_text("x = 1\n" * (MAX_LINES - 1))
    assert long_files(tmp_path) == ["tests/long.py: 400 lines"]
