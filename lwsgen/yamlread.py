"""The YAML loader lwsgen reads with: PyYAML's safe loader on libyaml where the installed PyYAML has it
(~10x faster: the KServe CRDs, ~2 MB each, took ~12 s pure-Python, and reading back one
example's output ~0.3 s), else the pure-Python one that reads the same documents."""

import yaml

SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
