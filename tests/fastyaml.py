"""YAML reading for the suite, through libyaml.

The tests read back every rendered file; PyYAML's pure-Python `safe_load` scanned them at ~40% of
the fast suite's CPU. libyaml builds the same objects (tests/test_render.py holds the writer to
both readers); a test that means the pure-Python reader names `yaml.SafeLoader` itself.
"""

import yaml

_LOADER = yaml.CSafeLoader


def load(stream):
    return yaml.load(stream, Loader=_LOADER)


def load_all(stream):
    return yaml.load_all(stream, Loader=_LOADER)
