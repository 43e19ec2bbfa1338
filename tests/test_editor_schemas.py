"""Editors and CI schema checks on overlays and bases, with the real tools: yaml-language-server
(the engine of VS Code's YAML extension and others, over LSP) and check-jsonschema. Before, an
overlay's `model: {servedName}` was "missing path" and `tokenSecret: {name}` "missing key" under
the modeline the docs gave it, while lwsgen accepted the file."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO
from lsp_client import diagnostics
from lwsgen.cli import main

pytestmark = pytest.mark.tools
SERVER = REPO / ".tools" / "node_modules" / ".bin" / "yaml-language-server"
CHECK = Path(sys.executable).parent / "check-jsonschema"
OVERLAY = "extends: base.yaml\nname: team-llama\nmodel:\n  servedName: llama\n  tokenSecret: {name: hf-token}\n"
BROKEN = "extends: base.yaml\nname: team-llama\nnode: {gpus: many}\n"


def _tool(path: Path) -> str:
    if not path.exists():
        pytest.fail(f"{path.name} is not installed; run the tests through `make test`, which installs it")
    return str(path)


@pytest.fixture
def repo(tmp_path):
    shutil.copytree(REPO / "schemas", tmp_path / "schemas")
    (tmp_path / "profiles").mkdir()
    return tmp_path


def _file(repo: Path, name: str, schema: str, body: str) -> Path:
    path = repo / "profiles" / name
    path.write_text(f"# yaml-language-server: $schema=../schemas/{schema}\n{body}")
    return path


def _messages(path: Path) -> list[str]:
    return [d["message"] for d in diagnostics(_tool(SERVER), str(path))]


def test_yaml_language_server_accepts_an_overlay_under_the_partial_schema(repo):
    assert _messages(_file(repo, "full.yaml", "profile.schema.json", OVERLAY)) == [
        'Missing property "key".',
        'Missing property "path".',
    ]  # the false errors the whole-profile schema gives an overlay
    assert _messages(_file(repo, "overlay.yaml", "profile-partial.schema.json", OVERLAY)) == []
    assert _messages(_file(repo, "broken.yaml", "profile-partial.schema.json", BROKEN)) == [
        'Incorrect type. Expected "integer".'
    ]


def _check(schema: str, *paths: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [_tool(CHECK), "--schemafile", str(REPO / "schemas" / schema), *map(str, paths)], capture_output=True, text=True
    )


def test_check_jsonschema_agrees(repo):
    overlay = _file(repo, "overlay.yaml", "profile-partial.schema.json", OVERLAY)
    assert _check("profile.schema.json", overlay).returncode == 1
    assert _check("profile-partial.schema.json", overlay).returncode == 0
    assert (
        _check("profile-partial.schema.json", _file(repo, "b.yaml", "profile-partial.schema.json", BROKEN)).returncode
        == 1
    )
    base = _file(repo, "base.yaml", "profile-partial.schema.json", "base: true\nruntime: vllm\nnode: {gpus: 8}\n")
    assert _check("profile-partial.schema.json", base).returncode == 0
    complete = sorted((REPO / "profiles").glob("*.yaml"))  # complete profiles: the whole-profile schema
    assert _check("profile.schema.json", *complete).returncode == 0


def test_lwsgen_says_which_schema_an_overlay_needs(write_profile, capsys, tmp_path):
    base = (REPO / "profiles" / "vllm-llama31-405b.yaml").read_text().replace("name: vllm-llama31-405b\n", "")
    write_profile(f"base: true\n{base}", "p/base.yaml")
    overlay = write_profile(
        "# yaml-language-server: $schema=../schemas/profile.schema.json\nextends: base.yaml\nname: team\n", "p/o.yaml"
    )
    assert main(["render", str(overlay), "--stdout"]) == 0
    assert "name profile-partial.schema.json in the modeline instead" in capsys.readouterr().err
    overlay.write_text(overlay.read_text().replace("profile.schema.json", "profile-partial.schema.json"))
    assert main(["render", str(overlay), "--stdout"]) == 0
    assert "modeline" not in capsys.readouterr().err
