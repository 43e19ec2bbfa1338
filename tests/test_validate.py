"""Stage 6: strict schemas for every emitted object, cross-object rules, problems located in the output."""

import json
import os

import pytest

from conftest import lws_of, objects_of
from lwsgen import kubeschemas
from lwsgen.output import relations, validate
from lwsgen.pipeline import render_profile
from lwsgen.problems import ProblemsError


def _errors(obj, version="1.33"):
    return [(error.path, error.message) for error in validate.schema_errors(obj, version)]


def test_rendered_objects_are_valid(render, minimal):
    for name, obj in objects_of(render(minimal)).items():
        errors = [(e.path, e.message) for e in validate.schema_errors(obj, "1.33", name)]
        assert errors == [], name


def test_unknown_field_in_a_pod_template_is_rejected(render, minimal):
    lws = lws_of(render(minimal))
    lws["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]["containers"][0]["gpus"] = 8
    [(path, message)] = _errors(lws)
    assert path == ("spec", "leaderWorkerTemplate", "leaderTemplate", "spec", "containers", 0, "gpus")
    assert message == "unknown field 'gpus'"


def test_unknown_top_level_lws_field_and_wrong_kind_shape_are_rejected(render, minimal):
    lws = lws_of(render(minimal))
    lws["spec"]["leaderWorkerTemplate"]["sizee"] = 2
    lws["spec"]["replicas"] = "two"
    paths = {path for path, _ in _errors(lws)}
    assert ("spec", "leaderWorkerTemplate", "sizee") in paths and ("spec", "replicas") in paths


def test_core_kinds_are_strict(render, minimal):
    service = objects_of(render(minimal))["service.yaml"]
    service["spec"]["selectr"] = {}
    assert any("selectr" in message for _, message in _errors(service))


def test_kubernetes_version_selects_the_schemas(render, minimal):
    assert "1.33" in kubeschemas.available_versions() and "1.31" in kubeschemas.available_versions()
    assert validate.validator("1.31", "v1", "Service") is not validate.validator("1.33", "v1", "Service")
    assert validate.validator("1.33", "v1", "Service") is validate.validator("1.33", "v1", "Service")


def test_unknown_kind_is_a_problem_not_a_crash():
    assert _errors({"apiVersion": "example.com/v1", "kind": "Gizmo", "metadata": {"name": "x"}}) == [
        (("kind",), "no schema for example.com/v1 Gizmo")
    ]


def _cross(files):
    return [(f, e.path, e.message) for f, _, e in relations.cross_object_errors(files)]


def test_service_must_select_leaders_of_an_lws_in_the_set(render, minimal):
    objs = objects_of(render(minimal))
    service, lws = objs["service.yaml"], objs["leaderworkerset.yaml"]
    assert _cross({"s": (service,), "l": (lws,)}) == []
    service["spec"]["selector"] = {"leaderworkerset.sigs.k8s.io/name": "demo", "role": "leader"}
    assert _cross({"s": (service,), "l": (lws,)})[0][:2] == ("s", ("spec", "selector"))
    service["spec"]["selector"] = {
        "leaderworkerset.sigs.k8s.io/name": "other",
        "leaderworkerset.sigs.k8s.io/worker-index": "0",
    }
    assert _cross({"s": (service,), "l": (lws,)})[0][:2] == ("s", ("spec", "selector"))


def test_service_ports_must_exist_on_the_leader(render, minimal):
    objs = objects_of(render(minimal))
    objs["service.yaml"]["spec"]["ports"][0]["targetPort"] = "grpc"
    [(file, path, message)] = _cross({"s": (objs["service.yaml"],), "l": (objs["leaderworkerset.yaml"],)})
    assert path == ("spec", "ports", 0, "targetPort") and "'grpc' is not a named port" in message


def test_requests_must_equal_limits(render, minimal):
    lws = lws_of(render(minimal))
    resources = lws["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0]["resources"]
    resources["limits"]["cpu"], resources["requests"]["cpu"] = "2", "1"
    [(_, path, message)] = _cross({"l": (lws,)})
    assert path[-1] == "resources" and message == "requests must equal limits (a whole node per pod): cpu differ"
    del lws["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0]["resources"]["requests"]
    assert _cross({"l": (lws,)}) == []  # omitted requests default to the limits


def test_invalid_output_is_reported_at_its_line_in_the_output_file(write_profile, minimal, monkeypatch):
    """A value the profile schema allows but Kubernetes refuses is caught before anything is written."""
    from lwsgen.derive import pods

    real = pods.container

    def broken(*args, **kwargs):
        return real(*args, **kwargs)._replace(command=({"not": "a string"},))

    monkeypatch.setattr(pods, "container", broken)
    with pytest.raises(ProblemsError) as err:
        render_profile(write_profile(minimal), "out", "p.yaml")
    first = err.value.problems[0]
    assert first.file == "out/demo/leaderworkerset.yaml" and first.line > 1
    assert first.path == "spec.leaderWorkerTemplate.leaderTemplate.spec.containers[0].command[0]"
    assert first.message.endswith("(rendered from p.yaml)")


def test_self_contained_schemas_validate_like_the_full_definitions(render, minimal):
    """Render compiles each kind from a text with only the definitions it reaches inlined; its
    verdicts match the schema compiled against all ~700 Kubernetes definitions."""
    import jsonschema_rs

    out = objects_of(render(minimal))
    lws = out["leaderworkerset.yaml"]
    lws["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0]["securityContext"]["runAsUser"] = (
        "root"
    )
    lws["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]["volumes"][0]["bogus"] = 1
    service = out["service.yaml"]
    service["spec"]["ports"][0]["port"] = "http"
    cases = [
        (lws, validate.resources.schema("leaderworkerset.schema.json"), "leaderworkerset.x-k8s.io/v1 LeaderWorkerSet"),
        (service, json.loads((kubeschemas.schema_dir("1.33") / "service-v1.json").read_text()), "v1 Service"),
    ]
    for obj, schema, key in cases:
        full = jsonschema_rs.validator_for(schema, registry=validate._registry("1.33"))
        contained = jsonschema_rs.validator_for(validate.strict_texts("1.33")[key])
        verdicts = [
            sorted((list(e.instance_path), e.message) for e in checker.iter_errors(obj))
            for checker in (full, contained)
        ]
        assert verdicts[0] == verdicts[1] and verdicts[0], key


def test_self_contained_schemas_are_cached_per_input_and_rebuilt_when_damaged(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv("LWSGEN_NO_CACHE", raising=False)
    validate.strict_texts.cache_clear()
    (tmp_path / "lwsgen").mkdir()
    (tmp_path / "lwsgen" / "k8s-1.33-1-2.json").write_text("{}")  # an older lwsgen's bundle
    others = [tmp_path / "lwsgen" / f"strict-1.33-other{i}.json" for i in range(5)]  # other installs' texts
    for age, other in enumerate(others):
        other.write_text("{}")
        os.utime(other, ns=(10**18 - age * 10**9, 10**18 - age * 10**9))
    built = validate.strict_texts("1.33")
    cached = [p for p in (tmp_path / "lwsgen").glob("strict-1.33-*.json") if "other" not in p.name]
    assert len(cached) == 1 and not (tmp_path / "lwsgen" / "k8s-1.33-1-2.json").exists()
    assert [other.exists() for other in others] == [True, True, True, False, False]  # the newest kept, 4 in all
    assert json.loads(cached[0].read_text()) == built
    cached[0].write_text("{not json")
    validate.strict_texts.cache_clear()
    assert validate.strict_texts("1.33") == built
    validate.strict_texts.cache_clear()


def test_the_schema_cache_never_writes_or_prunes_a_directory_someone_else_could_have_made(tmp_path, monkeypatch):
    """A cache directory that is a link (to anyone's directory) is neither written nor pruned."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "shared"))
    monkeypatch.delenv("LWSGEN_NO_CACHE", raising=False)
    victim = tmp_path / "victim"
    victim.mkdir()
    theirs = sorted(f"{prefix}-1.33-{i}.json" for prefix in ("strict", "k8s") for i in range(6))
    for name in theirs:
        (victim / name).write_text("{}")
    (tmp_path / "shared").mkdir()
    (tmp_path / "shared" / "lwsgen").symlink_to(victim)
    validate.strict_texts.cache_clear()
    try:
        assert validate.strict_texts("1.33")
    finally:
        validate.strict_texts.cache_clear()
    assert sorted(p.name for p in victim.iterdir()) == theirs


def test_a_cached_schema_or_crd_others_could_have_rewritten_is_not_read(tmp_path, monkeypatch):
    """The schemas decide what passes: a cached strict schema or parsed CRD that is writable by others
    or linked elsewhere (hard links survive a trusted directory) is read afresh, as a kept render is."""
    from lwsgen.output import crd

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("LWSGEN_NO_CACHE", raising=False)
    validate.strict_texts.cache_clear()
    try:
        real = validate.strict_texts("1.33")
        [kept] = (tmp_path / "cache" / "lwsgen").glob("strict-1.33-*.json")
        anything = json.dumps(dict.fromkeys(real, "{}"))  # every output would pass
        text = "kind: CustomResourceDefinition\n"
        crd._documents(text)
        [parsed] = (tmp_path / "cache" / "lwsgen" / "crds").glob("*.json")  # the one CRD file kept
        for planted, forged in ((kept, anything), (parsed, '[{"kind": "Forged"}]')):
            planted.write_text(forged)
            planted.chmod(0o666)
        validate.strict_texts.cache_clear()
        assert validate.strict_texts("1.33") == real
        assert crd._documents(text) == [{"kind": "CustomResourceDefinition"}]
        kept.unlink()
        (tmp_path / "elsewhere.json").write_text(anything)  # a second name for the same file
        os.link(tmp_path / "elsewhere.json", kept)
        validate.strict_texts.cache_clear()
        assert validate.strict_texts("1.33") == real
        if os.geteuid() == 0:  # another user's file (only root can give one away)
            parsed.unlink()
            parsed.write_text('[{"kind": "Forged"}]')
            os.chown(parsed, 1234, 1234)
            assert crd._documents(text) == [{"kind": "CustomResourceDefinition"}]
        for odd in (os.mkdir, os.mkfifo):  # not a file: made afresh, no hang, no error
            kept.unlink(missing_ok=True)
            odd(kept)
            validate.strict_texts.cache_clear()
            assert validate.strict_texts("1.33") == real
            kept.rmdir() if kept.is_dir() else kept.unlink()
    finally:
        validate.strict_texts.cache_clear()


def test_caches_made_under_a_group_writable_umask_are_private_and_kept(tmp_path, monkeypatch):
    """Under umask 002 (Ubuntu's default for users) the cache directories lwsgen makes are 0700 at every
    level, so it trusts them: mkdir's parents were 0775, and no cache was ever kept after that."""
    from lwsgen.output import crd

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("LWSGEN_NO_CACHE", raising=False)
    old = os.umask(0o002)
    validate.strict_texts.cache_clear()
    try:
        crd._documents("kind: CustomResourceDefinition\n")  # makes cache/lwsgen/crds first
        validate.strict_texts("1.33")
    finally:
        os.umask(old)
        validate.strict_texts.cache_clear()
    base = tmp_path / "cache" / "lwsgen"
    assert [oct(p.stat().st_mode & 0o777) for p in (tmp_path / "cache", base, base / "crds")] == ["0o700"] * 3
    assert list(base.glob("strict-1.33-*.json")) and list((base / "crds").glob("*.json"))


def test_kinds_lwsgen_does_not_emit_use_the_full_definitions(write_profile, capsys):
    from lwsgen.cli import main

    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "x"},
        "spec": {
            "selector": {"matchLabels": {"a": "b"}},
            "template": {
                "metadata": {"labels": {"a": "b"}},
                "spec": {"containers": [{"name": "c", "image": "i:1", "bogus": 1}]},
            },
        },
    }
    assert main(["validate", str(write_profile(deployment, "d.yaml"))]) == 1
    assert "unknown field 'bogus'" in capsys.readouterr().out


def test_what_is_not_json_is_found_at_its_path_by_the_fast_check_too():
    """jsondata.not_json checks the exact types a YAML reader builds without building paths, and
    walks again for the path only when something is not JSON: both answers are the walk's."""
    import datetime
    import math

    from hypothesis import given, settings
    from hypothesis import strategies as st

    from lwsgen import jsondata

    class Text(str):
        pass

    scalars = st.one_of(
        st.none(),
        st.booleans(),
        st.text(max_size=3),
        st.integers(min_value=-(2**64), max_value=2**64),
        st.floats(),
        st.sampled_from([b"bytes", datetime.date(2026, 1, 1), frozenset({1}), Text("sub"), math.inf]),
    )
    keys = st.one_of(st.text(max_size=3), st.integers(0, 3), st.sampled_from([Text("k"), None]))
    data = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(keys, inner, max_size=3))

    @settings(max_examples=400, deadline=None)
    @given(data)
    def agrees(value):
        assert jsondata.not_json(value, ("at",)) == jsondata._first_not_json(value, ("at",))

    agrees()
