"""The one table of output kinds: each kind declared once, and a new kind is its template, its
builder and one entry (traced here end to end with a PodDisruptionBudget)."""

from typing import NamedTuple

import jinja2
import pytest

import fastyaml
from conftest import REPO, merged
from lwsgen.derive import kinds
from lwsgen.derive.kinds import KINDS, Document, Kind


def test_every_kind_has_its_template_and_every_template_a_kind():
    templates = {
        p.name.removesuffix(".yaml.j2") for p in (REPO / "templates").glob("*.yaml.j2") if not p.name.startswith("_")
    }
    assert templates == {k.key for k in KINDS}


def test_files_outside_the_kustomization_say_why_at_their_top():
    for kind in KINDS:
        if not kind.in_kustomization and kind.key != kinds.KUSTOMIZATION:
            assert kind.header.startswith("# ") and kind.header.endswith("\n"), kind.key
        if kind.in_kustomization:
            assert not kind.header, kind.key


def test_schemas_come_from_the_table():
    from lwsgen.output import validate

    assert validate.PROJECT_SCHEMAS[("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet")] == "leaderworkerset.schema.json"
    assert ("v1", "Service") in validate.EMITTED_CORE and ("batch/v1", "Job") in validate.EMITTED_CORE
    assert validate.FILE_SCHEMAS == {
        "prometheus-adapter-rules.yaml": "prometheus-adapter-rules.schema.json",
        "eksctl-nodegroup.yaml": "eksctl-nodegroup.schema.json",
        "kustomizeconfig.yaml": "kustomizeconfig.schema.json",
        "kustomize-openapi.yaml": "kustomize-openapi.schema.json",
    }
    for kind in KINDS:
        for document in kind.documents:
            if document.schema:
                assert (REPO / "schemas" / document.schema).is_file()


def test_emitted_files_are_the_kinds_whose_builders_gave_values(render, minimal):
    rendered = render(merged(minimal, **{"monitoring.enabled": True}))
    expected = {
        "leaderworkerset.yaml",
        "service.yaml",
        "configmap.yaml",
        "networkpolicy.yaml",
        "podmonitor.yaml",
        "prometheusrule.yaml",
        "grafana-dashboard.yaml",
        "kustomization.yaml",
        "kustomizeconfig.yaml",
        "kustomize-openapi.yaml",
    }
    assert set(rendered.files) == expected
    listed = fastyaml.load(rendered.files["kustomization.yaml"])["resources"]
    assert listed == sorted(expected - {"kustomization.yaml", "kustomizeconfig.yaml", "kustomize-openapi.yaml"})


class Budget(NamedTuple):
    meta: object
    selector: dict


PDB_TEMPLATE = """{% from "_k8s.yaml.j2" import meta %}
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  {{ meta(v.meta) | indent(2) }}
spec:
  maxUnavailable: 0
  selector:
    matchLabels: {{ v.selector | q }}
"""


def _budget(ctx, kind):
    return Budget(ctx.meta(kind, ctx.profile.name), {"leaderworkerset.sigs.k8s.io/name": ctx.profile.name})


def test_adding_a_kind_is_a_template_a_builder_and_one_entry(render, minimal, tmp_path, monkeypatch):
    from lwsgen.render import environment

    (tmp_path / "poddisruptionbudget.yaml.j2").write_text(PDB_TEMPLATE)
    pdb = Kind(
        "poddisruptionbudget",
        (Document("policy/v1", "PodDisruptionBudget"),),
        "a PodDisruptionBudget",
        "always",
        _budget,
        "disruption-budget",
        wave=1,
    )
    table = (*KINDS[:-1], pdb, KINDS[-1])
    monkeypatch.setattr(kinds, "KINDS", table)
    monkeypatch.setattr(kinds, "BY_KEY", {k.key: k for k in table})
    env = environment()
    monkeypatch.setattr(env, "loader", jinja2.ChoiceLoader([env.loader, jinja2.FileSystemLoader(str(tmp_path))]))

    rendered = render(merged(minimal, **{"gitops.argocd.syncWaves": True}))
    budget = fastyaml.load(rendered.files["poddisruptionbudget.yaml"])
    assert budget["metadata"]["annotations"] == {"argocd.argoproj.io/sync-wave": "1"}
    assert budget["metadata"]["labels"]["app.kubernetes.io/component"] == "disruption-budget"
    assert "poddisruptionbudget.yaml" in fastyaml.load(rendered.files["kustomization.yaml"])["resources"]

    # and it is validated strictly like every other kind
    monkeypatch.setattr(
        _budget, "__code__", (lambda ctx, kind: Budget(ctx.meta(kind, ctx.profile.name), {"bad key!": 1})).__code__
    )
    from lwsgen.problems import ProblemsError

    with pytest.raises(ProblemsError) as err:
        render(minimal)
    assert any(p.file.endswith("poddisruptionbudget.yaml") for p in err.value.problems)
