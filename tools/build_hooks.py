"""Wheel build step (pyproject.toml [tool.setuptools.cmdclass]): ship what lwsgen would otherwise
build on its first run, so a fresh install's first render is as fast as later ones.

- templates/compiled/: every template compiled by lwsgen's own Jinja environment into Python
  modules, which pip byte-compiles at install (used while the installed Jinja is the one stamped);
- schemas/strict/: the self-contained strict schema texts for every Kubernetes version that
  kubernetes-validate bundles, named by the content they were built from (used while it matches).

An editable install (a checkout) skips this and builds both into the cache directory on first use.
"""

import sys
from pathlib import Path

from setuptools.command.build_py import build_py


class BuildPy(build_py):
    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return
        build_lib = Path(self.build_lib)
        sys.path.insert(0, str(build_lib))
        try:
            self._ship(build_lib / "lwsgen")
        finally:
            sys.path.remove(str(build_lib))

    def _ship(self, package: Path) -> None:
        import json

        from lwsgen import kubeschemas
        from lwsgen.output import validate
        from lwsgen.render import COMPILED_DIR, compile_into

        compile_into(package / "templates", package / "templates" / COMPILED_DIR)
        strict = package / "schemas" / validate.SHIPPED_STRICT
        strict.mkdir(parents=True, exist_ok=True)
        for version in kubeschemas.available_versions():
            texts = validate.build_strict_texts(version)
            (strict / validate.strict_file_name(version)).write_text(json.dumps(texts), encoding="utf-8")
