"""The Argo CD config-management plugin run as Argo CD runs it: discover and generate in the
application path, a clean environment with ARGOCD_APP_* and ARGOCD_ENV_* variables, a read-only
HOME, no network; the stream is fed to `kubectl kustomize` as a resource."""

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import fastyaml
from conftest import PROFILES, REPO, tool

pytestmark = pytest.mark.tools
PLUGIN = fastyaml.load((REPO / "docs" / "argocd" / "plugin.yaml").read_text())


@pytest.fixture
def app(tmp_path):
    path = tmp_path / "repo" / "apps" / "llama"
    path.mkdir(parents=True)
    for name in ("vllm-llama31-405b.yaml", "triton-llama3-405b.yaml"):
        shutil.copy(PROFILES / name, path / name)
    return path


def _escaped(name: str) -> str:
    return re.sub(r"[^A-Z0-9_]", "_", name.upper())


def _parameter_env(parameters: list[dict]) -> dict[str, str]:
    """What Argo CD sets for an Application's plugin parameters: ARGOCD_APP_PARAMETERS and PARAM_*,
    as pkg/apis/application/v1alpha1/types.go@v3.5.1 (ApplicationSourcePluginParameters.Environ)
    builds them; a stand-in because Argo CD's repo-server cannot run here without a cluster."""
    env = {"ARGOCD_APP_PARAMETERS": json.dumps(parameters, separators=(",", ":"))}
    for parameter in parameters:
        base = f"PARAM_{_escaped(parameter['name'])}"
        if "string" in parameter:
            env[base] = parameter["string"]
        for index, value in enumerate(parameter.get("array", [])):
            env[f"{base}_{index}"] = value
    return env


def _argocd_env(
    tmp_path: Path, parameters: list[dict] = (), plugin_env: dict[str, str] = (), **build: str
) -> dict[str, str]:
    """The environment of plugin.yaml's generate: Argo CD's build variables (repository.go newEnv,
    getPluginEnvs), plugin env as ARGOCD_ENV_<name> (getPluginParamEnvs), the parameters."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    if not (bin_dir / "lwsgen").exists():
        (bin_dir / "lwsgen-argocd-generate").symlink_to(REPO / "docs" / "argocd" / "generate.sh")
        (bin_dir / "lwsgen").symlink_to(Path(sys.executable).parent / "lwsgen")
    return {
        "PATH": f"{bin_dir}:/usr/bin:/bin",
        "HOME": "/proc/1",  # a HOME nothing can be written to
        "ARGOCD_APP_NAME": "llama",
        "ARGOCD_APP_NAMESPACE": "serving",
        "ARGOCD_APP_REVISION": "0123abcd",
        "ARGOCD_APP_SOURCE_PATH": "apps/llama",
        "ARGOCD_APP_SOURCE_REPO_URL": "https://git.example.com/platform",
        "KUBE_VERSION": "1.31.4",
        "KUBE_API_VERSIONS": "v1,apps/v1,leaderworkerset.x-k8s.io/v1",
        **build,
        **{f"ARGOCD_ENV_{k}": v for k, v in dict(plugin_env).items()},
        **(_parameter_env(list(parameters)) if parameters else {}),
    }


def _offline(command: list[str]) -> list[str]:
    """In a network namespace of its own (no interface but loopback), where the machine allows it."""
    probe = subprocess.run(["unshare", "-n", "true"], capture_output=True)
    return ["unshare", "-n", *command] if probe.returncode == 0 else command


def _generate(app: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    """plugin.yaml's generate command, its program found on PATH (the image installs it in /usr/local/bin)."""
    program, *args = PLUGIN["spec"]["generate"]["command"]
    return subprocess.run(_offline([Path(program).name, *args]), cwd=app, env=env, capture_output=True, text=True)


def test_discover_finds_an_application_of_profiles(app, tmp_path):
    found = subprocess.run(PLUGIN["spec"]["discover"]["find"]["command"], cwd=app, capture_output=True, text=True)
    assert found.returncode == 0 and found.stdout.strip().endswith(".yaml")
    empty = tmp_path / "other"
    empty.mkdir()
    (empty / "deployment.yaml").write_text("apiVersion: apps/v1\nkind: Deployment\n")
    assert (
        subprocess.run(PLUGIN["spec"]["discover"]["find"]["command"], cwd=empty, capture_output=True, text=True).stdout
        == ""
    )


def test_generate_streams_what_kustomize_accepts(app, tmp_path):
    run = _generate(app, _argocd_env(tmp_path))
    assert run.returncode == 0, run.stderr
    site = tmp_path / "site"
    site.mkdir()
    (site / "stream.yaml").write_text(run.stdout)
    (site / "kustomization.yaml").write_text("resources: [stream.yaml]\n")
    built = subprocess.run([tool("kubectl"), "kustomize", str(site)], capture_output=True, text=True)
    assert built.returncode == 0, built.stderr
    kinds = [d["kind"] for d in fastyaml.load_all(built.stdout) if d]
    assert kinds.count("LeaderWorkerSet") == 2 and "MPIJob" not in kinds and "Job" not in kinds


def _kinds(run: subprocess.CompletedProcess) -> list[str]:
    assert run.returncode == 0, run.stderr
    return [d["kind"] for d in fastyaml.load_all(run.stdout) if d]


def test_application_parameters_select_the_profile_and_one_offs(app, tmp_path):
    """Before: generate.sh read only ARGOCD_ENV_*, so `profile: one.yaml` rendered every profile."""
    one = _generate(
        app,
        _argocd_env(
            tmp_path,
            [{"name": "profile", "string": "triton-llama3-405b.yaml"}, {"name": "include", "string": "nccl-test"}],
        ),
    )
    kinds = _kinds(one)
    assert kinds.count("LeaderWorkerSet") == 1 and "MPIJob" in kinds
    only_params = _argocd_env(tmp_path, [{"name": "profile", "string": "triton-llama3-405b.yaml"}])
    del only_params["ARGOCD_APP_PARAMETERS"]  # PARAM_* alone (an older or trimmed environment)
    assert _kinds(_generate(app, only_params)).count("LeaderWorkerSet") == 1
    from_env = _argocd_env(tmp_path, plugin_env={"PROFILE": "vllm-llama31-405b.yaml"})
    assert _kinds(_generate(app, from_env)).count("LeaderWorkerSet") == 1
    both = _argocd_env(
        tmp_path, [{"name": "profile", "string": "triton-llama3-405b.yaml"}], {"PROFILE": "vllm-llama31-405b.yaml"}
    )
    run = _generate(app, both)
    names = [d["metadata"]["name"] for d in fastyaml.load_all(run.stdout) if d and d["kind"] == "LeaderWorkerSet"]
    assert names == ["triton-llama3-405b"]  # the Application's parameter wins over plugin env


def test_the_set_array_parameter_overrides_fields_and_is_checked(app, tmp_path):
    params = [{"name": "profile", "string": "vllm-llama31-405b.yaml"}, {"name": "set", "array": ["labels.tier=gold"]}]
    run = _generate(app, _argocd_env(tmp_path, params))
    lws = next(d for d in fastyaml.load_all(run.stdout) if d and d["kind"] == "LeaderWorkerSet")
    assert lws["metadata"]["labels"]["tier"] == "gold"
    bad = _generate(app, _argocd_env(tmp_path, [{"name": "set", "array": ["replicas=many"]}]))
    assert bad.returncode == 1 and "--set:1:10: replicas: must be an integer" in bad.stderr
    unknown = _generate(app, _argocd_env(tmp_path, [{"name": "profil", "string": "x.yaml"}]))
    assert unknown.returncode == 1 and "unknown plugin parameter 'profil'" in unknown.stderr


def test_the_documented_plugin_name_is_the_one_argo_cd_gives_it():
    """cmpserver/plugin/config.go@v3.5.1: the socket, and so the name an Application uses, is
    <metadata.name>-<spec.version> when a version is set."""
    spec = PLUGIN["spec"]
    name = f"{PLUGIN['metadata']['name']}-{spec['version']}" if spec.get("version") else PLUGIN["metadata"]["name"]
    application = fastyaml.load((REPO / "docs" / "argocd" / "application.yaml").read_text())
    assert application["spec"]["source"]["plugin"]["name"] == name == "lwsgen-v1"
    declared = {p["name"] for p in spec["parameters"]["static"]}
    assert {p["name"] for p in application["spec"]["source"]["plugin"]["parameters"]} <= declared
    from lwsgen.commands.argocd import PARAMETERS

    assert declared == set(PARAMETERS)
    gitops = (REPO / "docs" / "gitops.md").read_text()
    assert "plugin.name: lwsgen-v1" in gitops and "plugin.name: lwsgen`" not in gitops


def _overlay_outside_a_work_tree(tmp_path: Path) -> Path:
    """An Argo CD checkout without .git: apps/team/llama.yaml extends bases/llama.yaml, which sets no namespace."""
    repo = tmp_path / "checkout"
    base = fastyaml.load((PROFILES / "vllm-llama31-405b.yaml").read_text())
    for field in ("name", "namespace", "kubernetesVersion"):
        base.pop(field, None)
    (repo / "bases").mkdir(parents=True)
    (repo / "bases" / "llama.yaml").write_text(fastyaml.dump({**base, "base": True}))
    app = repo / "apps" / "team"
    app.mkdir(parents=True)
    (app / "llama.yaml").write_text("extends: ../../bases/llama.yaml\nname: team-llama\n")
    return app


def test_bases_outside_the_app_path_the_destination_namespace_and_the_cluster_version(tmp_path):
    """Before: extends: ../../bases/llama.yaml was refused without .git, and ARGOCD_APP_NAMESPACE ignored."""
    app = _overlay_outside_a_work_tree(tmp_path)
    env = _argocd_env(tmp_path, ARGOCD_APP_SOURCE_PATH="apps/team")
    docs = [d for d in fastyaml.load_all(_generate(app, env).stdout) if d]
    assert {d["metadata"].get("namespace") for d in docs if d["kind"] != "HTTPRoute"} == {"serving"}
    pinned = app / "llama.yaml"
    pinned.write_text(pinned.read_text() + "namespace: inference\n")
    docs = [d for d in fastyaml.load_all(_generate(app, env).stdout) if d]
    assert {d["metadata"].get("namespace") for d in docs if d["kind"] == "LeaderWorkerSet"} == {"inference"}
    elsewhere = _generate(app, _argocd_env(tmp_path, ARGOCD_APP_SOURCE_PATH="other/path"))
    assert elsewhere.returncode == 1 and "extends: a base must be a relative path inside" in elsewhere.stderr
    from lwsgen.commands.argocd import render_arguments

    assert render_arguments({"KUBE_VERSION": "1.31.4"}, app)[0][-2:] == ["--default", 'kubernetesVersion="1.31"']
    assert render_arguments({"KUBE_VERSION": "1.30"}, app)[0][-1] == 'kubernetesVersion="1.30"'  # Argo CD < 3.3.3
    assert "no schemas for 1.99" in render_arguments({"KUBE_VERSION": "1.99.0"}, app)[1][0]


def test_parameters_cannot_leave_the_app_path_or_inject(app, tmp_path):
    for outside in ("../../../etc", "./..", "/etc", "sub/../.."):
        escape = _generate(app, _argocd_env(tmp_path, [{"name": "profile", "string": outside}]))
        assert escape.returncode == 1 and "must stay inside the application path" in escape.stderr, outside
    injected = _generate(app, _argocd_env(tmp_path, [{"name": "include", "string": "nccl-test; touch /tmp/pwned"}]))
    assert injected.returncode == 1 and not Path("/tmp/pwned").exists()  # an argument, refused: not a kind
    strict = _generate(app, _argocd_env(tmp_path, [{"name": "strict", "string": "true"}]))
    assert strict.returncode == 0, strict.stderr  # the examples render without warnings
    wrong = _generate(app, _argocd_env(tmp_path, [{"name": "strict", "string": "yes"}]))
    assert wrong.returncode == 1 and "strict must be true or false" in wrong.stderr


@pytest.mark.parametrize(
    "raw",
    ['[{"name":"set","array":null}]', '[{"name":"set","array":5}]', "[" * 100000, '["profile"]', '{"a": 1}'],
)
def test_malformed_parameters_fail_the_sync_in_one_line(raw, app, tmp_path):
    env = _argocd_env(tmp_path)
    env["ARGOCD_APP_PARAMETERS"] = raw
    run = _generate(app, env)
    assert run.returncode == 1 and run.stderr.startswith("lwsgen plugin: ") and "Traceback" not in run.stderr
