"""kubeenv: `$(VAR)` expansion and container environments as the kubelet builds them.

The expansion cases are kubernetes/kubernetes third_party/forked/golang/expansion/expand_test.go
(TestMapReference, and doExpansionTest's table run through TestMapping and TestMappingDual), as read at
commit 490ffa432a878f5a75e5b5906d820d06e672556e; the Go string literals are kept as written.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from groupsim.kubeenv import (  # noqa: E402
    container_env,
    expand,
    expand_command,
    expand_probe_command,
    is_env_var_name,
    lws_env,
    mapping_for,
)

SINGLE_CONTEXT = [{"VAR_A": "A", "VAR_B": "B", "VAR_C": "C", "VAR_REF": "$(VAR_A)", "VAR_EMPTY": ""}]
DUAL_CONTEXT = [{"VAR_A": "A", "VAR_EMPTY": ""}, {"VAR_B": "B", "VAR_C": "C", "VAR_REF": "$(VAR_A)"}]

# doExpansionTest: (name, input, expected)
EXPANSION_CASES = [
    ("whole string", "$(VAR_A)", "A"),
    ("repeat", "$(VAR_A)-$(VAR_A)", "A-A"),
    ("beginning", "$(VAR_A)-1", "A-1"),
    ("middle", "___$(VAR_B)___", "___B___"),
    ("end", "___$(VAR_C)", "___C"),
    ("compound", "$(VAR_A)_$(VAR_B)_$(VAR_C)", "A_B_C"),
    ("escape & expand", "$$(VAR_B)_$(VAR_A)", "$(VAR_B)_A"),
    ("compound escape", "$$(VAR_A)_$$(VAR_B)", "$(VAR_A)_$(VAR_B)"),
    ("mixed in escapes", "f000-$$VAR_A", "f000-$VAR_A"),
    ("backslash escape ignored", "foo\\$(VAR_C)bar", "foo\\Cbar"),
    ("backslash escape ignored (2)", "foo\\\\$(VAR_C)bar", "foo\\\\Cbar"),
    ("lots of backslashes", "foo\\\\\\\\$(VAR_A)bar", "foo\\\\\\\\Abar"),
    ("nested var references", "$(VAR_A$(VAR_B))", "$(VAR_A$(VAR_B))"),
    ("nested var references second type", "$(VAR_A$(VAR_B)", "$(VAR_A$(VAR_B)"),
    ("value is a reference", "$(VAR_REF)", "$(VAR_A)"),
    ("value is a reference x 2", "%%$(VAR_REF)--$(VAR_REF)%%", "%%$(VAR_A)--$(VAR_A)%%"),
    ("empty var", "foo$(VAR_EMPTY)bar", "foobar"),
    ("unterminated expression", "foo$(VAR_Awhoops!", "foo$(VAR_Awhoops!"),
    ("expression without operator", "f00__(VAR_A)__", "f00__(VAR_A)__"),
    ("shell special vars pass through", "$?_boo_$!", "$?_boo_$!"),
    ("bare operators are ignored", "$VAR_A", "$VAR_A"),
    ("undefined vars are passed through", "$(VAR_DNE)", "$(VAR_DNE)"),
    ("multiple (even) operators, var undefined", "$$$$$$(BIG_MONEY)", "$$$(BIG_MONEY)"),
    ("multiple (even) operators, var defined", "$$$$$$(VAR_A)", "$$$(VAR_A)"),
    ("multiple (odd) operators, var undefined", "$$$$$$$(GOOD_ODDS)", "$$$$(GOOD_ODDS)"),
    ("multiple (odd) operators, var defined", "$$$$$$$(VAR_A)", "$$$A"),
    ("missing open expression", "$VAR_A)", "$VAR_A)"),
    ("shell syntax ignored", "${VAR_A}", "${VAR_A}"),
    ("trailing incomplete expression not consumed", "$(VAR_B)_______$(A", "B_______$(A"),
    ("trailing incomplete expression, no content, is not consumed", "$(VAR_C)_______$(", "C_______$("),
    ("operator at end of input string is preserved", "$(VAR_A)foobarzab$", "Afoobarzab$"),
    ("shell escaped incomplete expr", "foo-\\$(VAR_A", "foo-\\$(VAR_A"),
    ("lots of $( in middle", "--$($($($($--", "--$($($($($--"),
    ("lots of $( in beginning", "$($($($($--foo$(", "$($($($($--foo$("),
    ("lots of $( at end", "foo0--$($($($(", "foo0--$($($($("),
    ("escaped operators in variable names are not escaped", "$(foo$$var)", "$(foo$$var)"),
    ("newline not expanded", "\n", "\n"),
]


@pytest.mark.parametrize("contexts", [SINGLE_CONTEXT, DUAL_CONTEXT], ids=["TestMapping", "TestMappingDual"])
@pytest.mark.parametrize(
    ("text", "expected"), [case[1:] for case in EXPANSION_CASES], ids=[c[0] for c in EXPANSION_CASES]
)
def test_expand_table(contexts, text, expected):
    assert expand(text, mapping_for(*contexts)) == expected


def test_map_reference():
    """TestMapReference: each value expanded, in order, against the values expanded before it."""
    declared = {"FOO": "bar", "ZOO": "$(FOO)-1", "BLU": "$(ZOO)-2"}
    lookup = mapping_for(declared, {})
    for name in ["FOO", "ZOO", "BLU"]:
        declared[name] = expand(declared[name], lookup)
    assert declared == {"FOO": "bar", "ZOO": "bar-1", "BLU": "bar-1-2"}


@pytest.mark.parametrize(
    ("text", "expected"),
    [("$(é)", "<é>"), ("$é$(VAR_A)", "$éA"), ("$()", "<>"), ("", ""), ("$", "$"), ("$$", "$"), ("a$$$", "a$$")],
)
def test_expand_edges(text, expected):
    """Beyond the Go table: a non-ASCII character after `$` (upstream now decodes the whole rune), the empty
    name (looked up like any other), and `$` at the end."""
    assert expand(text, lambda name: f"<{name}>" if name != "VAR_A" else "A") == expected


def build(container, pod=None, *, prepend=(), fields=None, secrets=None, config_maps=None, **options):
    pod = pod or {"metadata": {"name": "demo-0", "namespace": "ml"}}
    return container_env(
        container,
        pod,
        prepend=list(prepend),
        field_values=fields or {},
        secret_values=secrets or {},
        config_map_values=config_maps or {},
        **options,
    )


def test_env_order_and_references():
    env = build(
        {
            "env": [
                {"name": "HOST", "value": "leader"},
                {"name": "URL", "value": "http://$(HOST):$(PORT)/$(MISSING)"},  # PORT is defined later
                {"name": "PORT", "value": "8000"},
                {"name": "AGAIN", "value": "$(HOST):$(PORT)"},
                {"name": "PRICE", "value": "$$(HOST) costs $$5"},
            ]
        }
    )
    assert env == [
        ("HOST", "leader"),
        ("URL", "http://leader:$(PORT)/$(MISSING)"),
        ("PORT", "8000"),
        ("AGAIN", "leader:8000"),
        ("PRICE", "$(HOST) costs $5"),
    ]


def test_value_from_field_ref_and_secret():
    pod = {
        "metadata": {
            "name": "demo-0-1",
            "namespace": "ml",
            "labels": {"leaderworkerset.sigs.k8s.io/worker-index": "1"},
        },
        "spec": {"serviceAccountName": "runner"},
    }
    fields = {"status.podIP": "10.0.0.7", "spec.nodeName": "node-a"}
    env = build(
        {
            "env": [
                {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
                {"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
                {"name": "SA", "valueFrom": {"fieldRef": {"fieldPath": "spec.serviceAccountName"}}},
                {
                    "name": "INDEX",
                    "valueFrom": {
                        "fieldRef": {"fieldPath": "metadata.labels['leaderworkerset.sigs.k8s.io/worker-index']"}
                    },
                },
                {"name": "NO_SUCH_LABEL", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['absent']"}}},
                {"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf", "key": "token"}}},
                {"name": "MODEL", "valueFrom": {"configMapKeyRef": {"name": "cfg", "key": "model"}}},
                {"name": "ADDRESS", "value": "$(POD_IP):$(INDEX)"},
            ]
        },
        pod,
        fields=fields,
        secrets={("hf", "token"): "s3cret"},
        config_maps={("cfg", "model"): "llama"},
    )
    assert dict(env) == {
        "POD_NAME": "demo-0-1",
        "POD_IP": "10.0.0.7",
        "NODE": "node-a",
        "SA": "runner",
        "INDEX": "1",
        "NO_SUCH_LABEL": "",
        "TOKEN": "s3cret",
        "MODEL": "llama",
        "ADDRESS": "10.0.0.7:1",
    }


def test_field_ref_without_a_value_raises():
    with pytest.raises(KeyError, match="status.hostIP"):
        build({"env": [{"name": "HOST_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.hostIP"}}}]})


def test_missing_secret_key_raises_unless_optional():
    ref = {"name": "hf", "key": "token"}
    with pytest.raises(KeyError, match="couldn't find key token in Secret ml/hf"):
        build({"env": [{"name": "TOKEN", "valueFrom": {"secretKeyRef": ref}}]}, secrets={("hf", "other"): "x"})
    with pytest.raises(KeyError, match="Secret ml/hf not found"):
        build({"env": [{"name": "TOKEN", "valueFrom": {"secretKeyRef": ref}}]})
    with pytest.raises(KeyError, match="ConfigMap ml/hf not found"):
        build({"env": [{"name": "TOKEN", "valueFrom": {"configMapKeyRef": ref}}]})
    optional = {"secretKeyRef": {**ref, "optional": True}}
    # An optional miss leaves the variable out entirely: an earlier definition of the name stays
    env = build({"env": [{"name": "TOKEN", "value": "fallback"}, {"name": "TOKEN", "valueFrom": optional}]})
    assert env == [("TOKEN", "fallback")]
    assert build({"env": [{"name": "TOKEN", "valueFrom": optional}]}) == []


def test_resource_field_ref_is_not_simulated():
    with pytest.raises(NotImplementedError):
        build({"env": [{"name": "CPU", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu"}}}]})


def test_env_from_prefix_invalid_keys_and_override():
    config_maps = {("cfg", "MODEL"): "llama", ("cfg", "1st"): "skipped", ("cfg", "tp.size"): "8"}
    secrets = {("hf", "TOKEN"): "s3cret"}
    container = {
        "envFrom": [
            {"configMapRef": {"name": "cfg"}},
            {"secretRef": {"name": "hf"}, "prefix": "HF_"},
            {"configMapRef": {"name": "absent", "optional": True}},
        ],
        "env": [{"name": "MODEL", "value": "$(MODEL)-instruct"}],  # env overrides envFrom, seeing its value
    }
    env = dict(build(container, secrets=secrets, config_maps=config_maps))
    assert env == {"MODEL": "llama-instruct", "tp.size": "8", "HF_TOKEN": "s3cret"}
    relaxed = dict(build(container, secrets=secrets, config_maps=config_maps, skip_invalid_env_from_keys=False))
    assert relaxed["1st"] == "skipped"
    with pytest.raises(KeyError, match="envFrom: Secret ml/gone not found"):
        build({"envFrom": [{"secretRef": {"name": "gone"}}]})


@pytest.mark.parametrize(
    ("name", "valid"),
    [("A_1", True), ("my.env-name", True), ("1st", False), ("..x", False), (".", False), ("a=b", False)],
)
def test_env_var_name(name, valid):
    assert is_env_var_name(name) is valid


def test_duplicate_names_last_value_first_place():
    env = build(
        {
            "env": [
                {"name": "A", "value": "1"},
                {"name": "B", "value": "$(A)"},
                {"name": "A", "value": "$(A)2"},  # sees the earlier A
                {"name": "C", "value": "$(A)"},
            ]
        }
    )
    assert env == [("A", "12"), ("B", "1"), ("C", "12")]


def test_service_env_is_a_fallback_and_comes_last():
    env = build(
        {"env": [{"name": "API", "value": "$(KUBERNETES_SERVICE_HOST)"}, {"name": "KUBERNETES_PORT", "value": "x"}]},
        service_env={"KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_PORT": "tcp://10.96.0.1:443"},
    )
    assert env == [("API", "10.96.0.1"), ("KUBERNETES_PORT", "x"), ("KUBERNETES_SERVICE_HOST", "10.96.0.1")]


def test_lws_env_format_and_order():
    assert lws_env("vllm", "ml", 2, 3, 4) == [
        ("LWS_LEADER_ADDRESS", "vllm-2.vllm.ml"),
        ("LWS_GROUP_SIZE", "4"),
        ("LWS_WORKER_INDEX", "3"),
    ]
    unique = lws_env("vllm", "ml", 2, 0, 4, subdomain="vllm-2")
    assert unique[0] == ("LWS_LEADER_ADDRESS", "vllm-2.vllm-2.ml")


def test_lws_webhook_prepends_and_drops_taken_names():
    container = {
        "env": [
            {"name": "LWS_WORKER_INDEX", "value": "99"},  # the webhook's value replaces the user's
            {"name": "X", "value": "first"},
            {"name": "X", "value": "second"},  # a user duplicate: the webhook keeps only the first
            {"name": "MASTER", "value": "$(LWS_LEADER_ADDRESS):29500"},
        ]
    }
    env = build(container, prepend=lws_env("vllm", "ml", 0, 1, 2))
    assert env == [
        ("LWS_LEADER_ADDRESS", "vllm-0.vllm.ml"),
        ("LWS_GROUP_SIZE", "2"),
        ("LWS_WORKER_INDEX", "1"),
        ("X", "first"),
        ("MASTER", "vllm-0.vllm.ml:29500"),
    ]
    # Without the webhook the kubelet alone lets the last duplicate win
    assert dict(build(container))["X"] == "second"


def test_expand_command():
    env = [("LWS_LEADER_ADDRESS", "vllm-0.vllm.ml"), ("LWS_GROUP_SIZE", "2"), ("LWS_GROUP_SIZE", "4")]
    args = ["--addr=$(LWS_LEADER_ADDRESS)", "--size", "$(LWS_GROUP_SIZE)", "$(UNSET)", "$$(LWS_GROUP_SIZE)", "$HOME"]
    assert expand_command(args, env) == [
        "--addr=vllm-0.vllm.ml",
        "--size",
        "4",
        "$(UNSET)",
        "$(LWS_GROUP_SIZE)",
        "$HOME",
    ]


def test_expand_probe_command_sees_only_static_values():
    container = {
        "envFrom": [{"configMapRef": {"name": "cfg"}}],
        "env": [
            {"name": "PORT", "value": "8000"},
            {"name": "URL", "value": "http://localhost:$(PORT)"},  # raw, not expanded
            {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
        ],
    }
    command = ["curl", "$(URL)", "$(POD_IP)", "$(FROM_CONFIG_MAP)"]
    assert expand_probe_command(command, container) == ["curl", "http://localhost:$(PORT)", "", "$(FROM_CONFIG_MAP)"]
