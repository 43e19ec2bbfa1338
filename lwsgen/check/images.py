"""Image references: valid by the Docker reference grammar, and pinned (a tag other than latest, or
a digest) unless the profile allows otherwise."""

import re

from lwsgen import registry
from lwsgen.load.source import Source
from lwsgen.problems import ERROR, Problem
from lwsgen.profile import Profile
from lwsgen.registry import PROFILE

# Docker reference grammar (distribution/reference), anchored.
_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_LABEL = r"[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?"
_DOMAIN = rf"(?:{_LABEL}(?:\.{_LABEL})*|\[[0-9a-fA-F:]+\])(?::[0-9]+)?"
IMAGE_RE = re.compile(
    rf"^(?:(?P<domain>{_DOMAIN})/)?(?P<path>{_COMPONENT}(?:/{_COMPONENT})*)"
    r"(?::(?P<tag>[\w][\w.-]{0,127}))?(?:@(?P<digest>[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}))?$"
)


def image_problem(image: str) -> str | None:
    """Why an image reference is unusable, or None."""
    if re.search(r"\s", image):
        return "image reference contains whitespace"
    match = IMAGE_RE.match(image)
    domain = match and match["domain"]
    if domain and not ("." in domain or ":" in domain or domain == "localhost" or domain.startswith("[")):
        # Without '.', ':' or localhost the first part is a repository path component (docker.io/<it>/...).
        match = match if re.fullmatch(_COMPONENT, domain) else None
    if not match:
        return "not a valid image reference (registry/repository:tag or @sha256:digest)"
    if match["digest"]:
        return None
    if not match["tag"]:
        return "has neither tag nor digest, so every pull may get a different image; pin a tag or digest"
    if match["tag"] == "latest":
        return "':latest' is not pinned; use a version tag or a digest"
    return None


@registry.rule("bad-image", scope=PROFILE, severity=ERROR)
def check_images(profile: Profile, src: Source) -> list[Problem]:
    """Every image the profile names is a valid reference pinned to a version tag or a digest (no
    :latest, no bare name)."""
    problems = []
    for path, value in (
        (("image",), profile.image),
        (("launch", "kubectlImage"), profile.launch.kubectl_image),
        (("ncclTest", "image"), profile.nccl_test.image),
        (
            ("gateway", "endpointPicker", "image"),
            profile.gateway.endpoint_picker.image if profile.gateway.enabled else "",
        ),
    ):
        if not value:
            continue
        why = image_problem(value)
        unpinned = why and ("latest" in why or "neither tag" in why)
        if why and not (unpinned and profile.allow_latest_image):
            problems.append(src.problem(path, f"{value!r}: {why}", "bad-image"))
    return problems
