"""validate's hand-edit suites run `lwsgen validate` thousands of times in one process on directories
where one file differs from the last run: each distinct text is read (libyaml's parse, two thirds of
a validate) once, and every later read of the same text gets a fresh copy of that reading, named for
the file it was read from this time. An edited text is read afresh, so what is under test is read as
validate reads it."""

from __future__ import annotations

import collections
import contextlib
import marshal

from lwsgen.load import source

KEPT = 64  # texts: a rendered directory's files and the edits of the last few runs


@contextlib.contextmanager
def unchanged_files_read_once():
    read = source.load_documents
    kept: collections.OrderedDict = collections.OrderedDict()

    def load_documents(text: str, file: str, *args, **kwargs) -> list[source.Source]:
        key = (text, args, tuple(sorted(kwargs.items())))
        reading = kept.get(key)
        if reading is None:
            documents = read(text, file, *args, **kwargs)  # a text with problems raises them each time
            try:
                reading = [(marshal.dumps(d.data), d.values_at, d.keys_at) for d in documents]
            except ValueError:  # data marshal cannot hold (a YAML timestamp): read again next time
                return documents
            kept[key] = reading
            if len(kept) > KEPT:
                kept.popitem(last=False)
        kept.move_to_end(key)
        return [source.Source(file, marshal.loads(data), dict(values), dict(keys)) for data, values, keys in reading]

    source.load_documents = load_documents
    try:
        yield
    finally:
        source.load_documents = read
