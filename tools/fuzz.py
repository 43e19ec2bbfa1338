"""make fuzz: generated and mutated profiles through the whole command line, in one process.

Every run must end 0 (rendered) or 1 (refused with positioned lines), never 3 (a bug) and never a
traceback. Profiles are the examples mutated line by line (deletions, duplicates, odd values,
truncations, indentation, YAML directives, aliases, control characters, huge and fractional
numbers) and generated junk. `python tools/fuzz.py [COUNT] [SEED]`; exit 1 lists what failed.
"""

import contextlib
import io
import random
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ODD = [
    "",
    "~",
    "null",
    "[]",
    "{}",
    "-1",
    "0",
    "8.0",
    "1e400",
    "1" + "0" * 30,
    "9" * 4400,
    "yes",
    "'x'",
    '"\\x1b[2J"',
    '"\\u0085"',
    '"\\ufffe"',
    "2024-01-01",
    "!!binary aGk=",
    "*a",
    "&a [1, *a]",
    "'$(HF_TOKEN)'",
    '"a\\tb"',
    "{gpus: 8}",
    "[8, 8]",
    "!!set {a}",
    "!!python/object:os.system ls",
    "'" + "x" * 70 + "'",
    ".nan",
    "-.inf",
]
LINES = [
    "---",
    "%YAML 1.1",
    "&a x: 1",
    "<<: *a",
    "bogus: 1",
    "- item",
    "? key",
    "\x00",
    "extends: /etc/passwd",
    "extends: ../../x.yaml",
    "extends: p.yaml",
    "labels: {'bad key': v}",
    "annotations: {a: '\x7f'}",
]


def mutate(text: str, rng: random.Random) -> str:
    lines = text.splitlines() or [""]
    for _ in range(rng.randint(1, 6)):
        i = rng.randrange(len(lines))
        choice = rng.randrange(7)
        if choice == 0 and len(lines) > 1:
            del lines[i]
        elif choice == 1:
            lines.insert(i, lines[rng.randrange(len(lines))])
        elif choice == 2 and ":" in lines[i]:
            lines[i] = f"{lines[i].split(':', 1)[0]}: {rng.choice(ODD)}"
        elif choice == 3:
            lines[i] = lines[i][: rng.randrange(len(lines[i]) + 1)]
        elif choice == 4:
            lines[i] = " " * rng.randint(0, 4) + lines[i]
        elif choice == 5:
            lines.insert(i, rng.choice(LINES))
        else:
            lines[i] = "".join(rng.choice("ab: -[]{}&*!|>'\"#%@\t\\\n") for _ in range(rng.randint(0, 30)))
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    count = int(argv[0]) if argv else 10_000
    rng = random.Random(int(argv[1]) if len(argv) > 1 else 0)
    sys.path.insert(0, str(REPO))
    from lwsgen.cli import main as lwsgen

    examples = [p.read_text() for p in sorted((REPO / "profiles").glob("*.yaml"))]
    codes: dict[int, int] = {}
    failures = []
    with tempfile.TemporaryDirectory() as work:
        path = Path(work) / "p.yaml"
        for index in range(count):
            text = mutate(rng.choice(examples), rng)
            path.write_text(text, encoding="utf-8", errors="surrogateescape")
            out, err = io.StringIO(), io.StringIO()
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                code = lwsgen(["render", str(path), "--stdout", "--format", rng.choice(["text", "json", "github"])])
            codes[code] = codes.get(code, 0) + 1
            if code not in (0, 1) or "Traceback" in err.getvalue():
                failures.append((index, code, err.getvalue()[-300:], text))
    print(f"{count} profiles: " + ", ".join(f"exit {c}: {n}" for c, n in sorted(codes.items())))
    for index, code, err, text in failures[:5]:
        print(f"--- #{index} exit {code}\n{err}\n{text[:500]}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
