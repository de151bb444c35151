"""The README's set-up commands and the CI script stay in step."""

import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _readme_commands():
    text = (ROOT / "README.md").read_text()
    setup = text.split("## Set up", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```bash\n(.*?)\n```", setup, flags=re.S)


@pytest.mark.skipif(not (ROOT / "README.md").exists(), reason="not run from a source checkout")
def test_readme_has_exactly_two_setup_commands():
    commands = _readme_commands()
    assert len(commands) == 2
    assert all("\n" not in c for c in commands)


@pytest.mark.skipif(not (ROOT / ".ci" / "run").exists(), reason="not run from a source checkout")
def test_ci_runs_the_readme_test_command_verbatim():
    test_command = _readme_commands()[1]
    assert "pytest" in test_command
    ci_lines = (ROOT / ".ci" / "run").read_text().splitlines()
    assert test_command in ci_lines


@pytest.mark.skipif(not (ROOT / "README.md").exists(), reason="not run from a source checkout")
def test_readme_python_examples_run(capsys):
    pytest.importorskip("sklearn")
    text = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```python\n(.*?)\n```", text, flags=re.S)
    assert len(blocks) >= 2
    namespace = {}
    for block in blocks:
        exec(compile(block, "README.md", "exec"), namespace)
    out = capsys.readouterr().out
    # The goals example prints the error rate and one line per constraint row.
    assert "error rate" in out
    assert "tpr[group=B] >= tpr[all] - 0.05" in out


def test_core_stub_lists_every_function_of_the_compiled_module():
    import ast

    from rateopt import _core

    stub = pathlib.Path(__file__).resolve().parents[1] / "python" / "rateopt" / "_core.pyi"
    if not stub.exists():
        pytest.skip("not run from a source checkout")
    declared = {n.name for n in ast.parse(stub.read_text()).body if isinstance(n, ast.FunctionDef)}
    # Single-underscore names (test support) are module functions too; dunders are not.
    compiled = {name for name in dir(_core) if not name.startswith("__")}
    assert declared == compiled
