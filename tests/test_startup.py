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
    assert "launch.rendezvousTimeoutSeconds: 3000 s is not below model.loadTimeoutSeconds (1800 s)" in out
    assert not (tmp_path / "out").exists()
