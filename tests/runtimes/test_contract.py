"""Every runtime fills the typed contract of runtimes/base.py, and what it declares at module level
for the contract is what its RUNTIME says (a constant added beside the record and not in it would be
read by nobody)."""

import pytest

from lwsgen import runtimes
from lwsgen.runtimes import aphrodite, llamacpp, sglang, triton_trtllm, trtllm_serve, vllm
from lwsgen.runtimes.base import Runtime

MODULES = (aphrodite, llamacpp, sglang, triton_trtllm, trtllm_serve, vllm)
# module constant -> Runtime field, for the facts a runtime states as constants
CONSTANTS = {
    "NAME": "name",
    "ENGINE": "engine",
    "DATA_AND_EXPERT": "data_and_expert",
    "LAUNCH_MODES": "launch_modes",
    "READS_HUB_IDS": "reads_hub_ids",
    "OWN_FIELDS": "own_fields",
    "DEFAULT_SERVED_NAME": "default_served_name",
    "FLAG_FEATURES": "flag_features",
    "WORKERS_LOAD_MODEL": "workers_load_model",
    "KV_MATCHING": "kv_matching",
    "KV_FLAGS": "kv_flags",
}
FUNCTIONS = ("capabilities", "parts", "check", "warnings", "kv_transfer", "kv_problems", "warnings_of_roles", "mode")


def test_the_registry_holds_every_runtime_module_by_its_name():
    assert {name: plugin for name, plugin in runtimes.REGISTRY.items()} == {m.NAME: m.RUNTIME for m in MODULES}
    assert all(isinstance(plugin, Runtime) for plugin in runtimes.REGISTRY.values())


@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.NAME)
def test_what_a_module_declares_for_the_contract_is_in_its_runtime(module):
    for constant, field in CONSTANTS.items():
        if hasattr(module, constant):
            assert getattr(module.RUNTIME, field) == getattr(module, constant), f"RUNTIME.{field}"
    for function in FUNCTIONS:
        if callable(getattr(module, function, None)):
            assert getattr(module.RUNTIME, function) is getattr(module, function), f"RUNTIME.{function}"


def test_a_runtime_that_leaves_a_field_out_gets_the_documented_default():
    plugin = runtimes.get("llamacpp")
    assert (plugin.data_and_expert, plugin.launch_modes, plugin.kv_transfer, plugin.kv_matching) == (
        False,
        (),
        None,
        (),
    )
    assert plugin.kv_problems(None) == [] and plugin.warnings_of_roles(None) == []
    assert runtimes.get("triton-trtllm").warnings(None) == []
