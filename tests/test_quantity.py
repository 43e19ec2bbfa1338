"""One quantity parser (lwsgen/quantity.py), held to apimachinery's own test vectors
(k8s.io/apimachinery pkg/api/resource/quantity_test.go, TestQuantityParse and TestParseQuantityString)."""

from decimal import Decimal

import pytest

from conftest import merged
from lwsgen import quantity
from lwsgen.cli import main

# TestQuantityParse's table (inputs and the amounts they stand for, before its rounding to nano)
VALID = {
    "0": 0,
    "0n": 0,
    "0u": 0,
    "0m": 0,
    "0Ki": 0,
    "0k": 0,
    "0Mi": 0,
    "0M": 0,
    "0Gi": 0,
    "0G": 0,
    "0Ti": 0,
    "0T": 0,
    "1": 1,
    "1Ki": 1024,
    "8Ki": 8 * 1024,
    "7Mi": 7 * 2**20,
    "6Gi": 6 * 2**30,
    "5Ti": 5 * 2**40,
    "4Pi": 4 * 2**50,
    "3Ei": 3 * 2**60,
    "10Ti": 10 * 2**40,
    "100Ti": 100 * 2**40,
    "5n": Decimal("5e-9"),
    "4u": Decimal("4e-6"),
    "3m": Decimal("0.003"),
    "9": 9,
    "8k": 8000,
    "50k": 50000,
    "7M": 7 * 10**6,
    "6G": 6 * 10**9,
    "5T": 5 * 10**12,
    "40T": 4 * 10**13,
    "300T": 3 * 10**14,
    "2P": 2 * 10**15,
    "1E": 10**18,
    "1E-3": Decimal("0.001"),
    "1e3": 1000,
    "1E6": 10**6,
    "1e9": 10**9,
    "1E12": 10**12,
    "1e15": 10**15,
    "1E18": 10**18,
    "1e14": 10**14,
    "100.035k": 100035,
    "0.001": Decimal("0.001"),
    "0.0005k": Decimal("0.5"),
    "0.5e0": Decimal("0.5"),
    "0.5e-1": Decimal("0.05"),
    "10.035M": 10035000,
    "1.2e3": 1200,
    "1.3E+6": 1300000,
    "1.40e9": 1400000000,
    "1.53E12": 153 * 10**10,
    "1.7E18": 17 * 10**17,
    "9.01": Decimal("9.01"),
    "8.1k": 8100,
    "2.5P": 25 * 10**14,
    "1.01E": 101 * 10**16,
    "12E": 12 * 10**18,
    "100.035Ki": Decimal("102435.84"),
    "0.5Mi": 2**19,
    "0.025Ti": Decimal("27487790694.4"),
    ".001": Decimal("0.001"),
    ".0001k": Decimal("0.1"),
    "1.": 1,
    "1.G": 10**9,
    "1.025Ti": Decimal("1126999418470.4"),  # TestParseQuantityString
    ".": 0,
    "-.": 0,  # TestParseQuantityString
}
INVALID = ["1.1.M", "1+1.0M", "0.1mi", "0.1am", "aoeu", ".5i", "1i", "-3.01i", "-3.01e-", " 1", "1 ", ""]


@pytest.mark.parametrize("text", sorted(VALID))
def test_apimachinery_valid_vectors_and_their_signed_forms(text):
    assert quantity.parse(text) == VALID[text]
    if text.startswith("-"):
        return
    assert quantity.parse("+" + text) == VALID[text]  # TestQuantityParse tries every one with + and -
    assert quantity.parse("-" + text.lstrip("-")) == -abs(Decimal(VALID[text]))


@pytest.mark.parametrize("text", INVALID)
def test_apimachinery_invalid_vectors(text):
    assert quantity.parse(text) is None


def test_numbers_are_quantities_and_booleans_are_not():
    assert quantity.parse(8) == 8 and quantity.parse(1.5) == Decimal("1.5") and quantity.parse(True) is None


def test_the_profile_takes_what_kubernetes_takes(write_profile, minimal, tmp_path, capsys):
    """Before: 1e-3, +1Gi, 100n and 250u were refused by a hand-written pattern."""
    for memory in ("1.2e12", "+1024Gi", "1Ti"):
        path = write_profile(merged(minimal, **{"node.memory": memory}))
        assert main(["render", str(path), "-o", str(tmp_path / "out")]) == 0, capsys.readouterr().err
    for memory in ("800GB", "lots", "-1Gi"):
        path = write_profile(merged(minimal, **{"node.memory": memory}))
        assert main(["render", str(path), "-o", str(tmp_path / "out")]) == 1
        assert "node.memory" in capsys.readouterr().err


def test_the_profile_schema_uses_the_same_grammar():
    """One grammar: the profile's pattern is apimachinery's, without the minus sign (no resource is negative)."""
    from lwsgen.check.schema import profile_schema

    assert profile_schema()["$defs"]["quantity"]["pattern"] == quantity.PATTERN.replace("[+-]?", "\\+?", 1)
