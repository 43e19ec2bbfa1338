"""`lwsgen argocd-generate`: the generate command of the Argo CD config-management plugin
(docs/argocd/plugin.yaml), which turns the variables Argo CD sets into one `lwsgen render --stdout`.

What Argo CD passes, from its source (argoproj/argo-cd v3.5.1; the same at v2.13.0):
- the Application's `spec.source.plugin.parameters` as `ARGOCD_APP_PARAMETERS` (a JSON list of
  `{name, string | array | map}`) and as `PARAM_<NAME>` (upper-cased, every character outside
  [A-Z0-9_] replaced by `_`; an array's items as `PARAM_<NAME>_<i>`):
  pkg/apis/application/v1alpha1/types.go, ApplicationSourcePluginParameters.Environ;
- `spec.source.plugin.env` as `ARGOCD_ENV_<name>`, the name as written: reposerver/repository/
  repository.go, getPluginParamEnvs; plugin.yaml's static parameter defaults only to the UI
  (cmpserver/plugin/plugin.go, GetParametersAnnouncement), so every default is applied here;
- `ARGOCD_APP_NAMESPACE` (the destination namespace, controller/state.go), `ARGOCD_APP_SOURCE_PATH`
  (the application path in the repository) and `KUBE_VERSION` (`1.29.3` from v3.3.3, `1.29` before):
  repository.go, newEnv and getPluginEnvs;
- the generate command runs in the application path of the whole repository, which may come
  without `.git` (cmpserver/plugin/plugin.go; `--plugin-tar-exclude`).
Parameters win over plugin env; the profile wins over the deployment's namespace and version.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Callable
from pathlib import Path

from lwsgen.kubeschemas import available_versions

PARAMETERS = ("profile", "strict", "include", "set")  # plugin.yaml's parameters, in its order


class PluginError(Exception):
    """A parameter Argo CD passed that lwsgen cannot use: one line for the sync status."""


def escaped(name: str) -> str:
    """Argo CD's PARAM_ name of a parameter (types.go, escaped)."""
    return re.sub(r"[^A-Z0-9_]", "_", name.upper())


def _from_json(raw: str) -> dict[str, object]:
    try:
        entries = json.loads(raw)
    except (ValueError, RecursionError) as err:
        raise PluginError(f"ARGOCD_APP_PARAMETERS is not JSON lwsgen can read: {err}") from None
    if not isinstance(entries, list):
        raise PluginError("ARGOCD_APP_PARAMETERS must be a JSON list of parameters")
    values: dict[str, object] = {}
    for entry in entries:
        name = entry.get("name") if isinstance(entry, dict) else None
        if name not in PARAMETERS:
            raise PluginError(f"unknown plugin parameter {name!r}; the lwsgen plugin takes {', '.join(PARAMETERS)}")
        if isinstance(entry.get("string"), str):
            values[name] = entry["string"]
        elif isinstance(entry.get("array"), list) and all(isinstance(v, str) for v in entry["array"]):
            values[name] = list(entry["array"])
        else:
            raise PluginError(f"plugin parameter {name!r} needs a string or an array of strings")
    return values


def _from_variables(environ: dict[str, str]) -> dict[str, object]:
    values: dict[str, object] = {}
    for name in PARAMETERS:
        base = f"PARAM_{escaped(name)}"
        if base in environ:
            values[name] = environ[base]
        items = [environ[f"{base}_{i}"] for i in range(len(environ)) if f"{base}_{i}" in environ]
        if items:
            values[name] = items
    return values


def _from_plugin_env(environ: dict[str, str]) -> dict[str, object]:
    values: dict[str, object] = {}
    for name in PARAMETERS:
        for variable in (f"ARGOCD_ENV_{name.upper()}", f"ARGOCD_ENV_{name}"):
            if variable in environ:
                values[name] = environ[variable]
    return values


def parameters(environ: dict[str, str]) -> dict[str, object]:
    """The plugin's parameters: the Application's (ARGOCD_APP_PARAMETERS, else PARAM_*) over
    plugin env (ARGOCD_ENV_*)."""
    given = _from_json(environ["ARGOCD_APP_PARAMETERS"]) if environ.get("ARGOCD_APP_PARAMETERS") else {}
    given = given or _from_variables(environ)
    return {**_from_plugin_env(environ), **given}


def _listed(value: object) -> list[str]:
    if isinstance(value, list):
        return [str(v).strip() for v in value if str(v).strip()]
    return [part.strip() for part in str(value).split(",") if part.strip()]


def repository_root(app_path: Path, source_path: str) -> Path | None:
    """The checkout's root: the application path less ARGOCD_APP_SOURCE_PATH (None if they disagree)."""
    parts = [p for p in Path(source_path).parts if p not in (".", "")]
    if not parts:
        return app_path
    if len(parts) >= len(app_path.parts) or list(app_path.parts[-len(parts) :]) != parts:
        return None
    return app_path.parents[len(parts) - 1]


def kubernetes_minor(kube_version: str) -> str | None:
    """X.Y of KUBE_VERSION (`1.29.3`, `1.29`, `v1.29.3-eks-...`)."""
    match = re.match(r"^v?(\d+)\.(\d+)", kube_version.strip())
    return f"{match[1]}.{match[2]}" if match else None


# The files outside the kustomization whose objects all live in the Application's namespace
# (tests/test_hatch_holes.py holds it to the scopes of what they write): whoever writes an
# Application may add those, never a cluster-scoped Volcano Queue nor eksctl or adapter files.
PLUGIN_INCLUDES = ("nccl-test",)


def render_arguments(environ: dict[str, str], app_path: Path) -> tuple[list[str], list[str]]:
    """(the `lwsgen render` arguments, notes for stderr); raises PluginError."""

    values = parameters(environ)
    profile = str(values.get("profile") or ".")
    target = (app_path / profile).resolve()
    if os.path.isabs(profile) or not target.is_relative_to(app_path.resolve()):
        raise PluginError(f"profile {profile!r} must stay inside the application path")
    strict = str(values.get("strict") or "false").lower()
    if strict not in ("true", "false"):
        raise PluginError(f"strict must be true or false, not {values['strict']!r}")
    # a profile named like an option is still a path (./-x.yaml), never a flag
    args, notes = ["render", f"./{profile}" if profile.startswith("-") else profile, "--stdout"], []
    if strict == "true":
        args.append("--strict")
    for kind in _listed(values.get("include", "")):
        if kind not in PLUGIN_INCLUDES:
            raise PluginError(
                f"include {kind!r}: through the plugin, only {', '.join(PLUGIN_INCLUDES)} (objects of the "
                "Application's namespace); cluster-scoped objects and configuration files are applied by their owner"
            )
        args += ["--include", kind]
    for assignment in values.get("set", []) if isinstance(values.get("set"), list) else _listed(values.get("set", "")):
        args += ["--set", str(assignment)]
    root = repository_root(app_path, environ.get("ARGOCD_APP_SOURCE_PATH", ""))
    if root is not None:
        args += ["--root", str(root)]
    if environ.get("ARGOCD_APP_NAMESPACE"):
        args += ["--default", f"namespace={json.dumps(environ['ARGOCD_APP_NAMESPACE'])}"]  # a string, quoted
    minor = kubernetes_minor(environ.get("KUBE_VERSION", ""))
    if minor in available_versions():
        args += ["--default", f'kubernetesVersion="{minor}"']
    elif minor is not None:
        notes.append(
            f"KUBE_VERSION {environ['KUBE_VERSION']}: lwsgen has no schemas for {minor}; profiles that leave "
            "kubernetesVersion unset render for lwsgen's default"
        )
    return args, notes


def generate(main: Callable[[list[str]], int]) -> int:
    """Run `main` (the CLI's, passed down: commands sit below cli) on the plugin's arguments."""
    try:
        args, notes = render_arguments(dict(os.environ), Path.cwd())
    except PluginError as err:
        sys.stderr.write(f"lwsgen plugin: {err}\n")
        return 1
    for note in notes:
        sys.stderr.write(f"lwsgen plugin: {note}\n")
    return main(args)
