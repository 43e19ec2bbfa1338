"""Case folders: tests/cases/invalid/<case>/ gives the exact lines a user sees; valid/<case>/ renders."""

from pathlib import Path

import pytest

from lwsgen.cli import main

CASES = Path(__file__).parent / "cases"
INVALID = sorted(p.name for p in (CASES / "invalid").iterdir())
VALID = sorted(p.name for p in (CASES / "valid").iterdir())


@pytest.mark.parametrize("case", INVALID)
def test_invalid_profile_gives_exact_problems_and_writes_nothing(case, monkeypatch, tmp_path, capsys):
    folder = CASES / "invalid" / case
    monkeypatch.chdir(folder)
    out = tmp_path / "out"
    assert main(["render", "profile.yaml", "-o", str(out)]) == 1
    captured = capsys.readouterr()
    assert captured.err == (folder / "expected.txt").read_text(encoding="utf-8")
    assert "Traceback" not in captured.err
    assert not out.exists()


@pytest.mark.parametrize("case", VALID)
def test_valid_profile_renders_and_validates(case, tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["render", str(CASES / "valid" / case / "profile.yaml"), "-o", str(out)]) == 0
    [directory] = out.iterdir()
    assert (directory / "kustomization.yaml").is_file()
    said = capsys.readouterr().err.splitlines()
    assert all(": warning: " in line or ": notice: " in line for line in said)  # nothing that stops a render
    # what render wrote, the pull-request check accepts: render and validate hold it to the same facts
    assert main(["validate", str(out)]) == 0, capsys.readouterr().err
