"""Print each hand-edit mutation of tests/test_invariants.py with the message `lwsgen validate` gives it,
on the first example it applies to (the table in the closing note of issue #19). Run from the repo root:
.venv/bin/python tools/mutation_table.py"""

import contextlib
import io
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, "tests")
import pytest

import test_invariants as t
from lwsgen.cli import main

rows = []
for name, (edit, expected) in sorted(t.MUTATIONS.items()):
    for ex in [
        "vllm-llama31-405b",
        "triton-llama3-405b",
        "sglang-deepseek-r1",
        "aphrodite-llama31-70b",
        "trtllm-serve-llama31-405b",
        "llamacpp-llama31-70b",
    ]:
        d = Path(tempfile.mkdtemp()) / ex
        shutil.copytree(Path("out") / ex, d)
        try:
            edit(d)
        except pytest.skip.Exception:
            continue
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(io.StringIO()):
            rc = main(["validate", str(d)])
        line = next((ln for ln in buf.getvalue().splitlines() if expected in ln), "NOT FOUND")
        line = line.replace(str(d.parent) + "/", "")
        if len(line) > 260:
            line = line[:260] + "…"
        rows.append(f"- **{name}** ({ex}, exit {rc}): `{line}`")
        break
print("\n".join(rows))
