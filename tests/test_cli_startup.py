"""The command line starts at once (issue 43): ``--version`` and ``--help`` import no
command module, and the root's list of commands is the one the modules register."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import typer
import typer.main

from llm4cov.cli.app import COMMANDS, LISTED, main

HEAVY = ("numpy", "scipy", "pyslang", "jinja2", "openai", "torch", "ray", "matplotlib",
         "pydantic", "rich", "ucis")


def test_the_listed_commands_are_the_registered_ones():
    """:data:`LISTED` (names, modules, help lines) equals what each module registers."""
    import importlib

    registered = {}
    for module in COMMANDS:
        holder = typer.Typer()
        importlib.import_module(f"llm4cov.cli.{module}_cmd").register(holder)
        group = typer.main.get_group(holder)
        for name, command in group.commands.items():
            short = command.short_help or (command.help or "").split("\n\n")[0]
            registered[name] = (module, " ".join(short.split()))
    assert registered == {name: (module, " ".join(short.split()))
                          for name, (module, short) in LISTED.items()}


@pytest.mark.parametrize(("argv", "exit_code"), [(["--version"], 0), (["--help"], 0),
                                                 ([], 2)])  # bare: the help, as a usage error
def test_version_and_help_import_no_command_and_no_heavy_library(argv, exit_code):
    code = (
        "import json, sys\n"
        "from llm4cov.cli.app import main\n"
        f"code = main({argv!r})\n"
        f"print(json.dumps([code, [m for m in {HEAVY!r} if m in sys.modules],"
        " [m for m in sys.modules if m.startswith('llm4cov.cli.') and m.endswith('_cmd')]]))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    code, heavy, commands = json.loads(done.stdout.strip().splitlines()[-1])
    assert (code, heavy, commands) == (exit_code, [], [])


def test_a_command_still_runs_and_an_unknown_one_is_a_usage_error(capsys):
    assert main(["cache", "--help"]) == 0
    assert "info" in capsys.readouterr().out
    assert main(["nosuch"]) == 2
    assert "No such command 'nosuch'" in capsys.readouterr().err
