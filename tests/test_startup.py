"""The startup budget covers the rendezvous and the load; a rendezvous bound not below the load
budget is refused."""

from conftest import MINIMAL, lws_of, merged
from lwsgen.cli import main


def _startup_probe(rendered):
    leader = lws_of(rendered)["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]["containers"][0]
    return leader["startupProbe"]


def test_the_startup_probe_covers_the_rendezvous_and_the_load(render):
    probe = _startup_probe(
        render(merged(MINIMAL, **{"launch.rendezvousTimeoutSeconds": 600, "model.loadTimeoutSeconds": 1800}))
    )
    assert probe["periodSeconds"] * probe["failureThreshold"] == 600 + 1800


def test_a_rendezvous_bound_not_below_the_load_budget_is_refused(write_profile, tmp_path, capsys):
    profile = write_profile(merged(MINIMAL, **{"launch.rendezvousTimeoutSeconds": 3000}))
    assert main(["render", str(profile), "-o", str(tmp_path / "out")]) == 1
    captured = capsys.readouterr()
    out = captured.out + captured.err
    assert (
        "launch.rendezvousTimeoutSeconds: 3000 s is not below the load budget (1800 s, the default (the model's size "
        "is unknown))" in out
    )
    assert not (tmp_path / "out").exists()


def test_a_hub_model_without_storage_warns_with_size_times_pods(said):
    profile = merged(MINIMAL, **{"model.family": "llama-3.1-405b", "model.path": "meta-llama/Llama-3.1-405B-Instruct"})
    _, warnings = said(merged(profile, replicas=3))
    [warning] = [w for w in warnings if w.startswith("model.path: ") and "gated" not in w]
    # the catalog's 405.9B parameters in bf16 = 812 GB per pod; 2 pods per group x 3 groups
    assert "every pod downloads the whole model at start (about 812 GB each, 4,871 GB for the 6 pods" in warning
    assert "set model.source (and storage, storage.create)" in warning


def test_no_download_warning_with_storage_a_local_path_or_a_runtime_that_reads_no_hub(said):
    hub = merged(MINIMAL, **{"model.path": "meta-llama/Llama-3.1-8B-Instruct"})
    claim = {"claimName": "models", "mountPath": "/models"}

    def download(profile) -> list[str]:  # the download warning, not the gated-model one (tested on its own)
        return [w for w in said(profile)[1] if w.startswith("model.path") and "gated" not in w]

    assert not download(merged(hub, storage=claim))
    assert not download(merged(hub, **{"model.path": "/models/m"}))
    gguf = merged(hub, runtime="llamacpp", image="r/llama.cpp:b10470", **{"model.path": "models/m.gguf"})
    assert not download(gguf)
    unknown = download(hub)
    assert unknown and "(2 pods there can be)" in unknown[0]
