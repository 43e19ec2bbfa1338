"""Generated documentation stays current with the code, and the README stays a short user guide."""

import shutil

from conftest import REPO
from lwsgen.commands import docs
from lwsgen.derive.kinds import KINDS


def test_every_generated_block_is_current():
    assert docs.stale(REPO) == [], "generated documentation is stale: run `make docs`"


def test_a_change_in_the_kinds_table_makes_the_docs_stale(tmp_path, monkeypatch):
    for name in [*docs.FILES, *docs.GENERATED_FILES]:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO / name, tmp_path / name)
    renamed = (KINDS[0]._replace(what="something else"), *KINDS[1:])
    monkeypatch.setattr("lwsgen.derive.kinds.KINDS", renamed)
    assert set(docs.stale(tmp_path)) == {"docs/runtimes.md"}
    assert docs.main([str(tmp_path)]) == 0
    assert docs.stale(tmp_path) == []
    assert "something else" in (tmp_path / "docs" / "runtimes.md").read_text()


def test_output_table_has_a_row_per_kind():
    table = docs.output_kinds()
    for kind in KINDS:
        assert f"| `{kind.file}` |" in table
    assert table.count("\n") == len(KINDS) + 2


def test_readme_is_a_short_user_guide():
    readme = (REPO / "README.md").read_text()
    assert len(readme.splitlines()) <= 200
    assert "make render" in readme and "make test" in readme
    for link in ("docs/profile.md", "docs/runtimes.md", "docs/development.md", "docs/performance.md"):
        assert f"({link})" in readme and (REPO / link).is_file()
