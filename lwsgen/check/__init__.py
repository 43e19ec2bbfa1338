"""Stage 2, check: loaded data -> problems (JSON Schema, then business rules) -> the typed, frozen
Profile (profile.py) with its derived numbers, and the warnings worth saying out loud."""

from lwsgen import platforms
from lwsgen.check import delivery, disaggregation, hatches, rules, schema, sizebound
from lwsgen.kubeschemas import available_versions
from lwsgen.load.source import Source
from lwsgen.problems import Problem, ProblemsError
from lwsgen.profile import Profile, from_data


def check(src: Source) -> tuple[Profile, list[Problem]]:
    """The profile and its warnings; raises ProblemsError with every error found."""
    problems = schema.check_schema(src) or delivery.model_problems(src)
    if problems:
        raise ProblemsError(problems)
    if src.data.get("base") is True:
        message = "this file is only a base (base: true): render a profile that extends it, or remove base: true"
        raise ProblemsError([src.problem(("base",), message, "base-only")])
    src.data.pop("base", None)  # base: false says nothing the typed profile keeps
    if src.data.get("roles"):
        if src.data.get("platform") == "kserve-isvc":
            raise ProblemsError([_roles_on_isvc(src)])
        return disaggregation.check(src, typed)
    if src.data.get("disaggregation"):
        message = "takes effect with roles only (prefill and decode): add roles, or leave it out"
        raise ProblemsError([src.problem(("disaggregation",), message, "not-without-roles")])
    return typed(src)


def typed(src: Source) -> tuple[Profile, list[Problem]]:
    """A schema-valid profile (or one role's, check/roles.py) through the rules."""

    profile = from_data(schema.with_defaults(src.data))
    if profile.platform != "lws":  # KServe's Services are its own, ClusterIP (llmisvc/workload.go#L112-L180)
        profile = profile._replace(service=profile.service._replace(type="ClusterIP"))
    profile = platforms.kserve_served_name(profile)
    if profile.platform == "kserve-isvc" and profile.launch.mode != "native":
        # Ray forms the group unless the profile asks for vLLM's own launch (KServe's mp backend)
        profile = profile._replace(launch=profile.launch._replace(mode="ray"))
    problems = sizebound.problems(profile, src)
    if problems:  # before any work that grows with the groups
        raise ProblemsError(problems)
    if profile.kubernetes_version in available_versions():
        # the hatches' Kubernetes structures first: the rules read into them
        problems = hatches.definition_problems(src, profile.kubernetes_version)
        if problems:
            raise ProblemsError(problems)
    problems = rules.check_rules(profile, src)
    if problems:
        raise ProblemsError(problems)
    if profile.kubernetes_version not in available_versions():
        raise ProblemsError(
            [
                src.problem(
                    ("kubernetesVersion",),
                    (
                        f"no bundled Kubernetes schemas for {profile.kubernetes_version}; available: "
                        f"{', '.join(available_versions())}"
                    ),
                    "unknown-version",
                )
            ]
        )
    return profile, rules.warnings(profile, src)


def _roles_on_isvc(src: Source) -> Problem:
    why = "an InferenceService has one head and its workers, no prefill and decode workloads: use platform kserve"
    return src.problem(("roles",), f"platform kserve-isvc has no equivalent: {why}", "not-on-platform")
