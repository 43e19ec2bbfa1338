"""Every check lwsgen makes is a rule, registered once: a function with the @rule decorator naming the
codes it reports (each in lwsgen/codes.py), its scope and its severity; its docstring is the user's
doc (docs/rules.md, `make docs`). A stage runs the rules of its scope with run(); nothing lists them
by hand. A runtime's own rules come through its typed contract (runtimes/base.Runtime) and are run
by the registered rules that ask it (check/rules.py check_runtime and runtime_warnings,
check/disaggregation.py runtime_role_rules and runtime_role_warnings).

What a rule takes and returns is its scope's:
- profile: (profile, src) -> [Problem]: the profile after its schema (check/);
- roles: (top) -> [Finding]: a profile with prefill/decode roles, across them;
- set: (obj, inventory) -> [Finding]: one rendered object against the inventory of its set
  (output/inventory.py), for the kinds the rule names;
- hatch: (change) -> [Problem]: what one escape hatch did to one object (output/guards/: what a
  hatch may not change, add or open; output/hatches/ applies them).
A gate rule runs before the others of its scope; when it finds anything, they do not run (they read
what it vouches for: an object of the right shape).
"""

import inspect
import os
from collections.abc import Callable, Iterable
from typing import Any

from lwsgen.codes import CODES
from lwsgen.problems import ERROR, NOTICE, WARNING
from lwsgen.records import Record

PROFILE, ROLES, SET, HATCH = "profile", "roles", "set", "hatch"
SCOPES = (PROFILE, ROLES, SET, HATCH)
SEVERITIES = (ERROR, WARNING, NOTICE)
# Set by the test suite: a rule that reports a code it did not declare fails the test that made it.
STRICT_ENV = "LWSGEN_STRICT_RULES"


class Rule(Record):
    function: Callable[..., Any]
    codes: tuple[str, ...]
    scope: str
    severity: str
    kinds: tuple[str, ...] = ()  # scope set: the kinds of object it reads (() every object)
    gate: bool = False

    @property
    def name(self) -> str:
        return f"{self.function.__module__}.{self.function.__qualname__}"

    @property
    def doc(self) -> str:
        return inspect.cleandoc(self.function.__doc__ or "")


_REGISTERED: list[Rule] = []


def rule(*codes: str, scope: str, severity: str = ERROR, kinds: tuple[str, ...] = (), gate: bool = False):
    """Register the decorated function as a rule reporting `codes`."""
    unknown = [code for code in codes if code not in CODES]
    if not codes or unknown or scope not in SCOPES or severity not in SEVERITIES:
        raise ValueError(f"a rule names known codes, a scope and a severity: {codes} {scope} {severity}")
    if scope == SET and (len(codes) != 1 or gate):
        raise ValueError("a set rule names one code (its findings get it) and is no gate (each object is its own)")

    def register(function: Callable[..., Any]) -> Callable[..., Any]:
        if not function.__doc__:
            raise ValueError(f"rule {function.__qualname__} has no docstring: it is the rule's user doc")
        _REGISTERED.append(Rule(function, codes, scope, severity, kinds, gate))
        return function

    return register


def rules(scope: str, severity: str | None = None) -> tuple[Rule, ...]:
    """The registered rules of a scope (and severity): its gates first, whatever their severity (the
    others read what they vouch for), then in the order their modules registered them."""
    chosen = [r for r in _REGISTERED if r.scope == scope and (r.gate or severity in (None, r.severity))]
    return tuple(sorted(chosen, key=lambda r: not r.gate))


def registered() -> tuple[Rule, ...]:
    return tuple(_REGISTERED)


def run(scope: str, severity: str | None, *args: Any, without: Callable[..., Any] | None = None) -> list:
    """Every finding of the scope's rules of that severity (None: all), rule by rule, but the rule
    `without` names; only a gate's when a gate finds anything."""
    strict = os.environ.get(STRICT_ENV) == "1"
    out: list = []
    for each in rules(scope, severity):
        if each.function is without:
            continue
        found = list(each.function(*args))
        if strict:
            declared(each, found)
        if each.gate and found:
            return found
        out += found
    return out


def declared(each: Rule, found: Iterable[Any]) -> None:
    """Refuse a finding whose code the rule did not declare (the suite runs with this on)."""
    undeclared = sorted({f.code for f in found} - set(each.codes))
    if undeclared:
        raise AssertionError(f"rule {each.name} reported {undeclared}, not among its codes {list(each.codes)}")
