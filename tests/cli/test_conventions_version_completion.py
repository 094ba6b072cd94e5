"""Issue #24 item 4: `pdd-plan --version` and shell completion (`--show-completion`,
`--install-completion`).

Expectations: the version is pyproject.toml's; `--version` answers as the `version`
command does, before any command runs; the completion script is one a shell runs to ask
`pdd-plan` for its words, and sourced in a real bash it completes `so` to `solve`; the
installer writes only under the HOME it is given (a tmp folder here, never the real one);
completing loads no model, solver or simulator (the start-up promise of
tests/cli/test_startup_lazy.py).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from pdd_plan.cli import completion

REPO = Path(__file__).resolve().parents[2]
HEAVY = ("numpy", "scipy", "pulp", "pdd_plan.model", "pdd_plan.plan", "pdd_plan.sim")


def _project_version() -> str:
    return tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]


def _env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PDD_PLAN_DEBUG"}
    return {**env, "HOME": str(home), **extra}


def cli_command() -> list[str]:
    """The installed program (tests/conftest.py's rule, which other folders' conftest
    modules shadow by name)."""
    exe = Path(sys.executable).with_name("pdd-plan")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "pdd_plan"]


def _cli(*args: str, home: Path, **extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([*cli_command(), *args], cwd=home, env=_env(home, **extra),
                          capture_output=True, text=True, timeout=120)  # fmt: skip


def test_version_option_prints_the_project_version_as_the_command_does(tmp_path):
    expected = _project_version() + "\n"
    option = _cli("--version", home=tmp_path)
    command = _cli("version", home=tmp_path)
    assert (option.returncode, option.stdout, option.stderr) == (0, expected, "")
    assert (command.returncode, command.stdout) == (0, expected)


def test_version_option_answers_before_a_command_runs(tmp_path):
    """Eager: `--version solve` prints the version and solves nothing (nothing on stderr,
    no file written)."""
    done = _cli("--version", "solve", "--bom", "x.csv", home=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (0, _project_version() + "\n", "")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_show_completion_prints_a_script_for_the_named_shell(tmp_path, shell):
    """Named after the option, the shell is used whatever $SHELL says; the script names
    the program and the variable through which the shell asks it for words."""
    done = _cli("--show-completion", shell, home=tmp_path, SHELL="/bin/sh")
    assert done.returncode == 0, done.stderr
    assert "pdd-plan" in done.stdout and completion.COMPLETE_VAR in done.stdout
    assert f"complete_{shell}" in done.stdout  # the shell's own protocol
    assert list(tmp_path.iterdir()) == []  # showing installs nothing


def test_an_unknown_shell_is_one_line_naming_the_option_and_the_shells(tmp_path):
    done = _cli("--show-completion", "tcsh", home=tmp_path)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert "--show-completion" in done.stderr and "'tcsh'" in done.stderr
    assert all(s in done.stderr for s in completion.SHELLS)


def test_no_shell_named_nor_detected_is_refused(monkeypatch):
    import shellingham

    def undetected():
        raise shellingham.ShellDetectionFailure()

    monkeypatch.setattr(shellingham, "detect_shell", undetected)
    monkeypatch.setenv("SHELL", "/usr/bin/tcsh")
    completion.take_shell_names(["--install-completion"])
    with pytest.raises(completion.InputError) as caught:
        completion.shell_named("--install-completion")
    assert "--install-completion" in str(caught.value) and "bash" in str(caught.value)
    monkeypatch.setenv("SHELL", "/bin/zsh")  # the login shell when no parent is one
    assert completion.shell_named("--install-completion") == "zsh"


def test_install_completion_writes_only_under_the_given_home(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    done = _cli("--install-completion", "bash", home=home)
    assert done.returncode == 0, done.stderr
    script = home / ".bash_completions" / "pdd-plan.sh"
    assert sorted(p.relative_to(home).as_posix() for p in home.rglob("*") if p.is_file()) == [
        ".bash_completions/pdd-plan.sh",
        ".bashrc",
    ]
    assert f"source '{script}'" in (home / ".bashrc").read_text()
    shown = _cli("--show-completion", "bash", home=home)
    assert script.read_text().strip() == shown.stdout.strip()


@pytest.mark.skipif(shutil.which("bash") is None, reason="no bash")
def test_the_bash_script_completes_a_command_name_in_bash(tmp_path):
    """The script sourced in bash, its function run as bash runs it on TAB: `pdd-plan so`
    becomes `solve`, `pdd-plan solve --arch` becomes `--architecture`."""
    script = _cli("--show-completion", "bash", home=tmp_path).stdout
    (tmp_path / "c.sh").write_text(script)
    exe = cli_command()
    if len(exe) != 1:
        pytest.skip("pdd-plan is not installed as a program")
    words = {"pdd-plan so": "1", "pdd-plan solve --arch": "2"}
    for line, cword in words.items():
        code = (f"source c.sh; COMP_WORDS=({line}); COMP_CWORD={cword}; "
                "_pdd_plan_completion pdd-plan; printf '%s\\n' \"${COMPREPLY[@]}\"")  # fmt: skip
        env = _env(tmp_path, PATH=f"{Path(exe[0]).parent}:{os.environ['PATH']}")
        done = subprocess.run(["bash", "-c", code], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=120)  # fmt: skip
        assert done.returncode == 0, done.stderr
        expected = {"pdd-plan so": ["solve"], "pdd-plan solve --arch": ["--architecture"]}
        assert done.stdout.split() == expected[line]


def test_completing_loads_no_model_solver_or_simulator(tmp_path):
    code = (
        "import json, sys\n"
        "from pdd_plan.cli.app import main\n"
        "try:\n    main([])\nexcept SystemExit:\n    pass\n"
        f"heavy = {HEAVY!r}\n"
        "print('LOADED=' + json.dumps(sorted(m for m in sys.modules "
        "if any(m == h or m.startswith(h + '.') for h in heavy))))\n"
    )
    env = _env(tmp_path, COMP_WORDS="pdd-plan solve --arch", COMP_CWORD="2")
    env[completion.COMPLETE_VAR] = "complete_bash"
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("LOADED=")[0].split() == ["--architecture"]
    assert json.loads(done.stdout.split("LOADED=")[1]) == []
