"""Where an output problem is: one function turns an error found in a parsed object (by its
schema or a cross-object rule) into a Problem at FILE:LINE:COL of the text it was parsed from."""

from collections.abc import Iterable

from lwsgen.load.source import Source
from lwsgen.problems import Finding, Problem


def problems(
    documents: list[Source], found: Iterable[tuple[int, Finding]], note: str = "", code: str | None = None
) -> list[Problem]:
    """Problems for (document index, error) pairs, positioned in `documents` (the file's parsed
    documents, in order); `note` is added to every message (say, which profile rendered it) and
    `code`, when given, replaces each error's own."""
    return [
        documents[index].problem(error.path, error.message + note, code or error.code, key=error.at_key)
        for index, error in found
    ]
