"""Stage 2, check: loaded data -> problems (JSON Schema, then business rules) -> the typed, frozen
Profile (profile.py) with its derived numbers, and the warnings worth saying out loud."""

from lwsgen.check import delivery, hatches, rules, schema
from lwsgen.check.profile import Profile, from_data
from lwsgen.load.source import Source
from lwsgen.problems import Problem, ProblemsError


def check(src: Source) -> tuple[Profile, list[Problem]]:
    """The profile and its warnings; raises ProblemsError with every error found."""
    from lwsgen.output.validate import available_versions

    problems = schema.check_schema(src) or delivery.model_problems(src)
    if problems:
        raise ProblemsError(problems)
    profile = from_data(schema.with_defaults(src.data))
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
