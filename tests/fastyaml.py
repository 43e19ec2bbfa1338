"""YAML for the suite, through libyaml.

The tests read back every rendered file; PyYAML's pure-Python `safe_load` scanned them at ~40% of
the fast suite's CPU. libyaml builds the same objects (tests/test_render.py holds the writer to
both readers) and its emitter writes what the pure-Python one does; a test that means the
pure-Python reader names `yaml.SafeLoader` itself.
"""

import yaml

_LOADER = yaml.CSafeLoader


def load(stream):
    return yaml.load(stream, Loader=_LOADER)


def load_all(stream):
    return yaml.load_all(stream, Loader=_LOADER)


def dump(data, stream=None, **options):
    """yaml.safe_dump through libyaml's emitter (the same text; PyYAML's pure-Python one cost the
    suite more than some of the renders it writes profiles for)."""
    return yaml.dump(data, stream, Dumper=yaml.CSafeDumper, **options)


def dump_all(documents, stream=None, **options):
    return yaml.dump_all(documents, stream, Dumper=yaml.CSafeDumper, **options)
