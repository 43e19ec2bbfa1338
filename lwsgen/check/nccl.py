"""Rules for the NCCL preflight: what each launcher needs from the image, and the test pods' DNS names."""

from lwsgen.load.source import Source
from lwsgen.naming import NCCL_DIGITS, NCCL_SUFFIX
from lwsgen.problems import Problem
from lwsgen.profile import Profile


def check(profile: Profile, src: Source, caps) -> list[Problem]:
    test = profile.nccl_test
    if not test.enabled:
        return []
    problems = []
    if test.launcher == "mpijob" and not test.image:
        problems.append(
            src.problem(
                ("ncclTest", "image"),
                (
                    "the mpijob launcher needs an image with nccl-tests (all_reduce_perf), OpenMPI and sshd; "
                    "set ncclTest.image, or use launcher job, which runs on the serving image"
                ),
                "missing-image",
            )
        )
    if test.launcher == "job" and not test.image and not caps.image_has_pytorch:
        problems.append(
            src.problem(
                ("ncclTest", "image"),
                (
                    f"the job launcher runs PyTorch, which the {profile.runtime} image lacks; "
                    "set ncclTest.image to an image with PyTorch and NCCL"
                ),
                "missing-image",
            )
        )
    job = f"{profile.name}{NCCL_SUFFIX}-{'0' * NCCL_DIGITS}"
    # the job's pod host names <job>-<index>; the MPIJob's worker pods <job>-worker-<index>
    hostname = f"{job}-{profile.group_size - 1}" if test.launcher == "job" else f"{job}-worker-{profile.group_size - 1}"
    if len(hostname) > 63:
        problems.append(
            src.problem(
                ("name",),
                f"the NCCL test pod hostname {hostname!r} would exceed 63 characters; shorten the name",
                "name-too-long",
            )
        )
    return problems
