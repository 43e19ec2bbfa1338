"""The simulator's API server on its own: kubectl's jsonpath as the launch scripts use it, label and
field selectors, and RBAC from a rendered Role (no namespaces needed)."""

import pytest

from groupsim.api import Forbidden, Rbac, jsonpath, token_for

PODS = {
    "kind": "List",
    "items": [
        {"metadata": {"name": "a-0"}, "status": {"containerStatuses": [{"name": "leader", "ready": True}]}},
        {"metadata": {"name": "a-0-1"}, "status": {"containerStatuses": [{"name": "worker", "ready": False}]}},
    ],
}


def test_jsonpath_names_and_ranges():
    assert jsonpath("{.items[*].metadata.name}", PODS) == "a-0 a-0-1"
    listing = '{range .items[*]}{.metadata.name}{" "}{.status.containerStatuses[*].ready}{"\\n"}{end}'
    assert jsonpath(listing, PODS) == "a-0 true\na-0-1 false\n"
    assert jsonpath('{.items[0].status.containerStatuses[?(@.name=="leader")].ready}', PODS) == "true"
    assert jsonpath("{range .items[*]}{.metadata.name}{end}", {"items": []}) == ""


ROLE = {
    "kind": "Role",
    "metadata": {"name": "r", "namespace": "ns"},
    "rules": [
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]},
        {"apiGroups": [""], "resources": ["pods/exec"], "verbs": ["create"], "resourceNames": ["a-0-1"]},
    ],
}
BINDING = {
    "kind": "RoleBinding",
    "metadata": {"name": "r", "namespace": "ns"},
    "roleRef": {"kind": "Role", "name": "r"},
    "subjects": [{"kind": "ServiceAccount", "name": "launcher", "namespace": "ns"}],
}


def test_rbac_follows_the_rendered_role():
    rbac = Rbac([ROLE, BINDING])
    token = token_for("ns", "launcher")
    rbac.check(token, "list", "pods", "ns", None)
    rbac.check(token, "create", "pods/exec", "ns", "a-0-1")
    with pytest.raises(Forbidden, match='cannot create resource "pods/exec" named "a-1-1"'):
        rbac.check(token, "create", "pods/exec", "ns", "a-1-1")
    with pytest.raises(Forbidden, match="system:anonymous"):
        rbac.check(None, "list", "pods", "ns", None)
    with pytest.raises(Forbidden, match="system:serviceaccount:ns:default"):
        rbac.check(token_for("ns", "default"), "list", "pods", "ns", None)
