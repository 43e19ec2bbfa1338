"""Kubernetes resource quantities, parsed as apimachinery parses them (k8s.io/apimachinery
pkg/api/resource/quantity.go, ParseQuantity; its grammar):

    <quantity>        ::= <signedNumber><suffix>
    <suffix>          ::= <binarySI> | <decimalExponent> | <decimalSI>
    <binarySI>        ::= Ki | Mi | Gi | Ti | Pi | Ei
    <decimalSI>       ::= n | u | m | "" | k | M | G | T | P | E
    <decimalExponent> ::= "e" <signedNumber> | "E" <signedNumber>
    <signedNumber>    ::= <number> | <sign><number>;  <sign> ::= "+" | "-"
    <number>          ::= <digits> | <digits>.<digits> | <digits>. | .<digits>

No surrounding space; `1E` is an exa, `1E3` an exponent. The one parser of lwsgen: the profile's
fields (its schema pattern is PATTERN), the containers lwsgen did not derive, and every quantity of
the output. tests/test_quantity.py runs quantity_test.go's vectors.
"""

from __future__ import annotations

import decimal
import re
from decimal import Decimal

PATTERN = r"^[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]*)(Ki|Mi|Gi|Ti|Pi|Ei|[eE][+-]?[0-9]+|[numkMGTPE])?$"
_QUANTITY = re.compile(PATTERN)
_SCALE = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_SCALE |= {"n": Decimal("1e-9"), "u": Decimal("1e-6"), "m": Decimal("1e-3"), "": 1}
_SCALE |= {"k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18}
HELP = "a Kubernetes quantity such as 64, 500m, 512Gi, 1.5Ti or 1e9"


def parse(value: object) -> Decimal | None:
    """The amount a quantity stands for, or None if Kubernetes would refuse it. YAML numbers are
    quantities too (the API reads a JSON number as its text); booleans are not."""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        return None
    text = value if isinstance(value, str) else repr(value)
    match = _QUANTITY.fullmatch(text)
    if match is None:
        return None
    suffix = match.group(3) or ""
    number = text[: len(text) - len(suffix)]
    if number.lstrip("+-") in (".", ""):
        number = number.replace(".", "0") or "0"
    # Exact for every digit a profile could hold (apimachinery keeps arbitrary precision too); an
    # exponent beyond what any resource could mean is not a quantity lwsgen can compare.
    with decimal.localcontext(
        decimal.Context(prec=120, Emax=999, Emin=-999, traps=[decimal.Overflow, decimal.InvalidOperation])
    ):
        try:
            amount = Decimal(number)
            amount = amount.scaleb(int(suffix[1:])) if suffix not in _SCALE else amount * _SCALE[suffix]
            return amount if amount.is_finite() else None  # a decimal exponent above: e3, E-3, e+6
        except (ArithmeticError, ValueError):
            return None


def is_quantity(value: object) -> bool:
    return parse(value) is not None


def gigabytes(value: object) -> float:
    """A valid quantity in GB (10^9 bytes)."""
    amount = parse(value)
    if amount is None:
        raise ValueError(f"{value!r} is not a Kubernetes quantity")
    return float(amount / 10**9)
