"""A command whose extra is not installed says which extra and the command that installs it,
exits 1 and shows no traceback: the README's quick start installs `.[local]` only, and docs/mcp.md
then tells the user to run `quantdesk mcp`."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from importlib import metadata

import pytest

from cli.doors import DOOR_MODULES
from shared.extras import EXTRA_OF_MODULE, extra_of, install_command
from tests.cli_process import ROOT

PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
EXTRAS: dict[str, list[str]] = PYPROJECT["project"]["optional-dependencies"]


def _requirement_name(requirement: str) -> str:
    return re.split(r"[\s<>=!~\[;]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def _distributions_of(extra: str) -> set[str]:
    """The distributions ``extra`` installs, following the extras it includes."""
    names = set()
    for requirement in EXTRAS[extra]:
        name = _requirement_name(requirement)
        included = re.search(r"quantdesk\[([\w,-]+)\]", requirement)
        if included:
            for inner in included.group(1).split(","):
                names |= _distributions_of(inner)
        else:
            names.add(name)
    return names


@pytest.mark.parametrize("module", sorted(EXTRA_OF_MODULE))
def test_each_module_is_installed_by_the_extra_the_table_names(module: str) -> None:
    """Where the module is not installed here (the `online` extra is not in `dev`), its
    distribution must carry its name."""
    extra = EXTRA_OF_MODULE[module]
    installed = metadata.packages_distributions().get(module, [module])
    providers = {name.lower().replace("_", "-") for name in installed}
    assert providers & _distributions_of(extra), (module, extra, providers)


def test_a_submodule_counts_by_its_package_and_a_core_module_has_no_extra() -> None:
    assert extra_of("mcp.server.fastmcp") == "mcp"
    assert extra_of("pandas") is None and extra_of(None) is None


def test_the_install_command_is_this_environments_pip_from_the_clone() -> None:
    """The suite runs from an editable install (`pip install -e '.[dev]'`)."""
    assert install_command("mcp") == f"{sys.executable} -m pip install -e '{ROOT}[mcp]'"


@pytest.mark.parametrize(
    ("hidden", "argv", "env", "extra"),
    [
        ("mcp", ["mcp"], {}, "mcp"),
        ("fastapi", ["console"], {}, "console"),
        (
            "psycopg",
            ["portfolio", "list"],
            {"QUANTDESK_DATABASE_URL": "postgresql+psycopg://desk@127.0.0.1:9/desk"},
            "postgres",
        ),
    ],
)
def test_a_missing_extra_is_one_line_naming_it_and_its_install_command(
    hidden: str, argv: list[str], env: dict[str, str], extra: str
) -> None:
    """The package is hidden from the import system, as it is where it was never installed.
    `quantdesk console` and `quantdesk mcp` hand the process over to ``python -m <door>``, so
    the package is hidden there."""
    door = DOOR_MODULES.get(argv[0])
    start = (
        f"import runpy; runpy.run_module({door!r}, run_name='__main__')"
        if door
        else "from cli.main import main; main()"
    )
    args = argv[1:] if door else argv
    program = (
        f"import sys; sys.modules[{hidden!r}] = None; sys.argv = ['quantdesk', *{args!r}]; {start}"
    )
    result = subprocess.run(
        [sys.executable, "-c", program],
        cwd=ROOT,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    [line] = result.stderr.strip().splitlines()
    assert line.startswith("error: ") and f"`{install_command(extra)}`" in line
    assert repr(hidden) in line or hidden in line
