"""Recording rules proven with the real promtool: every rendered group passes `promtool check rules`
and every group of every example has a `promtool test rules` unit test in tests/promtool/."""

import shutil
import subprocess
from pathlib import Path

import pytest

import fastyaml
from conftest import REPO, tool

PROMTOOL_TESTS = Path(__file__).parent / "promtool"
RULE_FILES = sorted((REPO / "out").glob("*/prometheusrule.yaml"))
UNIT_TESTS = sorted(PROMTOOL_TESTS.glob("*-test.yaml"))


def _groups(rule_file: Path) -> list[dict]:
    return fastyaml.load(rule_file.read_text())["spec"]["groups"]


def _write_rules(directory: Path, groups: list[dict]) -> Path:
    path = directory / "rules.yaml"
    path.write_text(fastyaml.dump({"groups": groups}, sort_keys=False))  # promtool reads bare groups
    return path


def _promtool(*args, cwd=None):
    return subprocess.run([tool("promtool"), *args], capture_output=True, text=True, cwd=cwd)


@pytest.mark.tools
@pytest.mark.parametrize("rule_file", RULE_FILES, ids=[p.parent.name for p in RULE_FILES])
def test_promtool_check_rules_passes_on_every_rendered_group(rule_file, tmp_path):
    proc = _promtool("check", "rules", str(_write_rules(tmp_path, _groups(rule_file))))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"SUCCESS: {sum(len(g['rules']) for g in _groups(rule_file))} rules found" in proc.stdout


def _unit_test_target(test_file: Path) -> tuple[str, str]:
    profile, suffix = test_file.name.removesuffix("-test.yaml").rsplit("-", 1)
    return profile, suffix


@pytest.mark.tools
@pytest.mark.parametrize("test_file", UNIT_TESTS, ids=[p.stem for p in UNIT_TESTS])
def test_promtool_unit_tests_prove_each_recorded_value(test_file, tmp_path):
    profile, suffix = _unit_test_target(test_file)
    groups = [g for g in _groups(REPO / "out" / profile / "prometheusrule.yaml") if g["name"].endswith(f".{suffix}")]
    assert len(groups) == 1
    _write_rules(tmp_path, groups)
    shutil.copy(test_file, tmp_path / test_file.name)
    proc = _promtool("test", "rules", test_file.name, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_every_emitted_group_and_record_has_a_unit_test():
    tested = {(_unit_test_target(t)) for t in UNIT_TESTS}
    for rule_file in RULE_FILES:
        for group in _groups(rule_file):
            suffix = group["name"].rsplit(".", 1)[1]
            if suffix == "alerts":
                continue  # tests/test_alerts.py: every alert, firing and not, from the rendered objects
            assert (rule_file.parent.name, suffix) in tested, (
                f"no tests/promtool/{rule_file.parent.name}-{suffix}-test.yaml"
            )
            test = fastyaml.load((PROMTOOL_TESTS / f"{rule_file.parent.name}-{suffix}-test.yaml").read_text())
            checked = {e["expr"] for t in test["tests"] for e in t["promql_expr_test"]}
            for rule in group["rules"]:
                assert rule["record"] in checked, f"{rule['record']} of {rule_file} is not tested"


def test_record_names_follow_level_metric_operations():
    for rule_file in RULE_FILES:
        for group in _groups(rule_file):
            for rule in (r for r in group["rules"] if "record" in r):  # alerts: tests/test_alerts.py
                level, metric, operations = rule["record"].split(":")
                assert level == "namespace_pod" and metric and operations


def test_keda_query_is_the_one_the_unit_test_proves():
    scaled = fastyaml.load((REPO / "out" / "sglang-deepseek-r1" / "scaledobject.yaml").read_text())
    query = scaled["spec"]["triggers"][0]["metadata"]["query"]
    test = fastyaml.load((PROMTOOL_TESTS / "sglang-deepseek-r1-runtime-test.yaml").read_text())
    assert query in {e["expr"] for t in test["tests"] for e in t["promql_expr_test"]}


@pytest.mark.tools
def test_adapter_and_keda_queries_are_valid_promql(tmp_path):
    """The adapter's metricsQuery with its placeholders filled as the adapter does, and every KEDA query."""
    exprs = []
    for adapter in (REPO / "out").glob("*/prometheus-adapter-rules.yaml"):
        for rule in fastyaml.load(adapter.read_text())["rules"]:
            series = rule["seriesQuery"].split("{", 1)[0]
            exprs.append(
                rule["metricsQuery"]
                .replace("<<.Series>>", series)
                .replace("<<.GroupBy>>", "pod")
                .replace("<<.LabelMatchers>>", 'namespace="inference",pod=~"a-0|a-1"')
            )
    for scaled in (REPO / "out").glob("*/scaledobject.yaml"):
        exprs += [t["metadata"]["query"] for t in fastyaml.load(scaled.read_text())["spec"]["triggers"]]
    assert len(exprs) >= 2
    groups = [{"name": "queries", "rules": [{"record": f"check:query:{i}", "expr": e} for i, e in enumerate(exprs)]}]
    proc = _promtool("check", "rules", str(_write_rules(tmp_path, groups)))
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.tools
def test_a_served_name_beyond_the_basic_plane_still_makes_valid_promql(render, tmp_path):
    """Triton's records and dashboard select the served model by name: a name with an emoji (beyond
    U+FFFF) is written as it is, not as JSON's surrogate-pair escapes, which PromQL refuses."""
    profile = fastyaml.load((REPO / "profiles" / "triton-llama3-405b.yaml").read_text())
    profile["model"]["servedName"] = "ensemble-\U0001f680"
    rendered = render(profile)
    groups = fastyaml.load(rendered.files["prometheusrule.yaml"])["spec"]["groups"]
    proc = _promtool("check", "rules", str(_write_rules(tmp_path, groups)))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "ensemble-\U0001f680" in rendered.files["grafana-dashboard.yaml"]
