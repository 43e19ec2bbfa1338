"""Command line: main(argv) -> exit status. The only place that turns stage failures into output.

Stages are imported inside the commands so that `lwsgen --help` starts instantly.
"""

from __future__ import annotations

import argparse
import functools
import gc
import os
import sys
from pathlib import Path

from lwsgen import __version__
from lwsgen.problems import FORMATTERS, Problem, ProblemsError, format_github, format_text, printable

FORMATS = ("text", "json", "github")  # keep in step with problems.FORMATTERS (tested)
EXIT_OK, EXIT_INVALID, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3
# Kinds of derive/kinds.py outside the kustomization (a test keeps this in step; the table is not
# imported here so that --help stays instant).
OUTSIDE_KUSTOMIZATION = ("prometheus-adapter-rules", "volcano-queue", "nccl-test", "eksctl-nodegroup")


@functools.cache  # built once a process (~5 ms): tests and library callers run main() many times
def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="lwsgen",
        description=(
            "Render one model profile into the validated Kubernetes manifests that serve it across "
            "several GPU nodes with LeaderWorkerSet."
        ),
    )
    parser.add_argument("--version", action="version", version=f"lwsgen {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for add in (_render_arguments, _validate_arguments, _plan_arguments, _explain_arguments):
        add(commands)
    schema = commands.add_parser(
        "schema", help="print the profile JSON Schema", description="Print the profile JSON Schema."
    )
    schema.add_argument("--partial", action="store_true", help="the schema of a base: every field, none required")
    commands.add_parser(
        "argocd-generate",
        help="the Argo CD plugin's generate: render from the variables Argo CD sets (docs/gitops.md)",
        description="Render the application's profiles as Argo CD's config-management plugin: parameters from "
        "ARGOCD_APP_PARAMETERS / PARAM_* (or ARGOCD_ENV_*), namespace and Kubernetes version from "
        "ARGOCD_APP_NAMESPACE and KUBE_VERSION where the profile leaves them unset.",
    )
    return parser


def _render_arguments(commands) -> None:
    render = commands.add_parser(
        "render",
        help="render profiles into OUT/<name>/",
        description=(
            "Render each profile (or every *.yaml/*.yml profile under a directory) into OUT/<name>/. "
            "Nothing is written unless every profile is valid."
        ),
    )
    render.add_argument(
        "paths", nargs="+", metavar="PROFILE_OR_DIR", help="profiles, directories, or - (standard input)"
    )
    render.add_argument("-o", "--out", default="out", metavar="OUT", help="output root (default: out)")
    mode = render.add_mutually_exclusive_group()
    mode.add_argument(
        "--check", action="store_true", help="write nothing; report missing, stale or extra files; exit 1 on drift"
    )
    mode.add_argument("--stdout", action="store_true", help="write nothing; print one multi-document YAML stream")
    render.add_argument("--format", choices=FORMATS, default="text", help="how problems are printed (default: text)")
    render.add_argument(
        "--strict", action="store_true", help="treat warnings (e.g. a model that does not fit its GPUs) as errors"
    )
    render.add_argument(
        "-j",
        "--jobs",
        type=_positive,
        default=0,
        metavar="N",
        help=argparse.SUPPRESS,  # accepted and ignored: a batch renders in one process (lwsgen/batch.py says why)
    )
    render.add_argument(
        "--include",
        action="append",
        choices=OUTSIDE_KUSTOMIZATION,
        metavar="KIND",
        help="with --stdout, also this file outside the kustomization (repeatable): "
        + ", ".join(OUTSIDE_KUSTOMIZATION),
    )
    render.add_argument(
        "--force",
        action="store_true",
        help="replace or remove files in OUT/<name>/ that lwsgen did not write (not in .lwsgen-files)",
    )
    render.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="PATH=VALUE",
        help="override a profile field (repeatable; e.g. replicas=4, autoscaling.maxReplicas=8), checked as the file",
    )
    render.add_argument(
        "--default",
        action="append",
        default=[],
        metavar="PATH=VALUE",
        help="a field's value where no file of the profile sets it (repeatable; the profile wins)",
    )
    render.add_argument(
        "--root",
        metavar="DIR",
        help="a directory `extends` may reach besides the profile's own tree and its git work tree",
    )
    render.add_argument(
        "--keep",
        action="store_true",
        help="keep OUT/<name>/ directories lwsgen wrote whose profile (in the paths given) is gone or renamed",
    )
    render.add_argument(
        "--lock-timeout",
        type=_seconds,
        default=60.0,
        metavar="SECONDS",
        help="how long to wait for another render into the same OUT (default 60)",
    )


def _validate_arguments(commands) -> None:
    check = commands.add_parser(
        "validate",
        help="validate profiles and manifests (files or directories)",
        description=(
            "Validate profiles and rendered or hand-edited manifests, auto-detected, with the strict validators render "
            "uses plus cross-object rules over everything given. Exit 0 valid, 1 invalid."
        ),
    )
    check.add_argument("paths", nargs="+", metavar="PATH")
    check.add_argument("--format", choices=FORMATS, default="text", help="text (default), json, or github annotations")
    check.add_argument(
        "--crd",
        action="append",
        metavar="PATH",
        help="validate custom resources against these CRDs (a file or directory, repeatable): schema, unknown "
        "fields and x-kubernetes-validations CEL rules; default: lwsgen's bundled schemas",
    )
    check.add_argument(
        "--kubernetes-version",
        default="1.33",
        metavar="X.Y",
        help="Kubernetes schemas for manifests (default 1.33; profiles use their kubernetesVersion)",
    )


def _billions(text: str) -> float:
    """A parameter count in billions: 405, 405B (or 405b) and 405e9 are all 405."""
    import argparse

    value = text.strip().removesuffix("B").removesuffix("b")
    try:
        number = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a parameter count (405, 405B or 405e9)") from None
    if number <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive parameter count")
    return number / 1e9 if number >= 1e6 else number  # a count in units, not billions


def _plan_arguments(commands) -> None:
    plan = commands.add_parser(
        "plan",
        help="size a deployment: nodes and tensor x pipeline split for a model on a GPU",
        description="Smallest node count and parallelism that hold a model on a GPU type (offline estimate).",
    )
    which = plan.add_mutually_exclusive_group(required=True)
    which.add_argument("--model", metavar="NAME", help="a catalog model (see docs/sizing.md)")
    which.add_argument(
        "--params",
        type=_billions,
        metavar="N",
        help="parameter count for a model outside the catalog: 405, 405B and 405e9 alike",
    )
    plan.add_argument(
        "--dtype", choices=("bf16", "fp16", "fp8", "int8", "int4", "mxfp4"), help="weight dtype (default: the model's)"
    )
    plan.add_argument("--gpu", required=True, metavar="TYPE", help="GPU type, e.g. h100-80gb, or a short name (h200)")
    plan.add_argument("--gpus-per-node", type=int, default=8, metavar="N", help="GPUs per node (default 8)")
    plan.add_argument(
        "--context",
        type=int,
        default=8192,
        metavar="TOKENS",
        help="tokens per sequence for the KV cache (default 8192)",
    )
    plan.add_argument("--concurrency", type=int, default=1, metavar="N", help="sequences held at once (default 1)")
    plan.add_argument("--format", choices=("text", "json"), default="text")
    plan.add_argument(
        "--emit-profile", metavar="NAME", help="print a profile skeleton for the plan (needs --runtime and --image)"
    )
    plan.add_argument("--runtime", metavar="R", help="runtime of the emitted profile")
    plan.add_argument("--image", metavar="I", help="image of the emitted profile")


def _explain_arguments(commands) -> None:
    explain = commands.add_parser(
        "explain",
        help="what a profile will run: groups, pods, ranks, objects, autoscaling path",
        description="Explain what a profile renders to, without writing anything.",
    )
    explain.add_argument("profile", metavar="PROFILE_OR_DIR", help="a profile, or a directory: every profile in it")
    explain.add_argument(
        "--format", choices=("text", "mermaid"), default="text", help="text tree (default) or a mermaid diagram"
    )


def _safe(text: str) -> str:
    """One line whatever a path or value holds: control characters shown as escapes."""

    return printable(text)


def _seconds(text: str) -> float:
    import math

    value = float(text)
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError("must be a number of seconds, 0 or more")
    return value


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be 1 or more")
    return value


def _report(problems: list, fmt: str, *, stdout_taken: bool = False) -> None:
    """Errors and warnings in the chosen format: text for people on stderr; json (one array) and
    GitHub annotations for machines on stdout, unless stdout carries the YAML stream."""

    if fmt == "text":
        if problems:
            sys.stderr.write(FORMATTERS["text"](problems))
        return
    stream = sys.stderr if stdout_taken else sys.stdout
    if problems or fmt == "json":
        stream.write(FORMATTERS[fmt](problems))


def _drift_report(found: list, fmt: str, directories: int) -> str:
    """--check's findings: lines and bounded diffs, one GitHub annotation per file, or a JSON list."""
    import json

    if fmt == "json":
        rows = [{"file": str(d.path), "state": d.state, "profile": d.profile, "diff": list(d.diff)} for d in found]
        return json.dumps(rows, indent=2) + "\n"
    if fmt == "github":
        return format_github([Problem(str(d.path), 1, 1, "", d.line(), f"drift-{d.state}") for d in found])
    if not found:
        return f"{directories} output director{'y is' if directories == 1 else 'ies are'} up to date\n"
    return "".join(_safe(d.line()) + "\n" + "".join(f"  {_safe(line)}\n" for line in d.diff) for d in found)


def _strictly(problems: list, strict: bool) -> list:
    """--strict: every warning is an error (notices stay notices)."""
    return [p._replace(severity="error") if p.severity == "warning" else p for p in problems] if strict else problems


def _render(args: argparse.Namespace) -> int:
    # start-up: the render stages (Jinja, schemas) load for render only
    from lwsgen.commands import render

    # start-up: loaded by the commands that write
    from lwsgen.output import write

    given = _given(args)
    if isinstance(given, int):
        return given
    profiles = render.profile_paths(args.paths, None if args.stdout else args.out)
    if not profiles:
        sys.stderr.write(f"lwsgen render: no profiles found in {' '.join(args.paths)}\n")
        return EXIT_INVALID
    if args.stdout:
        return _render_stream(args, profiles, given)
    results, problems = render.render_all(profiles, args.out, given)
    problems = _strictly(problems, args.strict)
    if any(p.is_error for p in problems):
        _report(problems, args.format)
        return EXIT_INVALID
    # The report of what was written is for people: on stderr when stdout carries json.
    out = sys.stderr if args.format == "json" else sys.stdout
    _report(problems, args.format, stdout_taken=args.check)
    out_root = Path(args.out)
    if args.check:
        try:
            found = [item for result in results for item in write.drift(out_root, result)]
            if not args.keep:
                found += [
                    write.Drift(o.directory, "orphan", o.source)
                    for o in write.orphans(out_root, results, [Path(p) for p in args.paths])
                ]
        except OSError as err:
            sys.stderr.write(f"lwsgen render: cannot read {_safe(str(err.filename or out_root))}: {err.strerror}\n")
            return EXIT_INVALID
        sys.stdout.write(_drift_report(found, args.format, len(results)))
        return EXIT_INVALID if found else EXIT_OK
    try:
        with write.locked(out_root, args.lock_timeout):
            reports = list(zip(results, write.write_all(out_root, results, args.force), strict=True))
            orphans = [] if args.keep else write.orphans(out_root, results, [Path(p) for p in args.paths])
            kept = write.remove_orphans(out_root, orphans, args.force)
    except write.WriteError as err:
        sys.stderr.write(f"lwsgen render: {_safe(str(err))}\n")
        return EXIT_INVALID
    _say_orphans(orphans, kept, out)
    for result, report in reports:
        p = result.profile
        out.write(
            f"{report.directory}/: {len(result.files)} files, {len(report.changed)} changed"
            f"{f', {len(report.removed)} removed' if report.removed else ''} "
            f"({_shape(p)})\n"
        )
        for name in report.kept:
            sys.stderr.write(
                f"lwsgen render: kept {_safe(str(report.directory / name))}: lwsgen did not write it and "
                "--check reports it; remove it, or render with --force\n"
            )
    return EXIT_OK


def _render_stream(args: argparse.Namespace, profiles: list, given) -> int:
    """--stdout: each profile's part of the stream is spooled to a temporary file as it renders (memory
    stays flat however many profiles) and printed once every profile has passed. Not printed as it
    comes: a stream cut short by a later profile's error, piped into `kubectl apply -f -`, would
    apply half a deployment set."""
    import shutil
    import tempfile

    # start-up: the render stages (Jinja, schemas) load for render only
    from lwsgen.commands import render

    # start-up: loaded by the commands that write
    from lwsgen.output import write

    include = tuple(args.include or ())
    with tempfile.TemporaryFile("w+", encoding="utf-8", newline="") as spool:
        results, problems = render.render_all(
            profiles, args.out, given, sink=lambda result: spool.write(write.stream([result], include))
        )
        problems = _strictly(problems, args.strict)
        if any(p.is_error for p in problems):
            _report(problems, args.format)
            return EXIT_INVALID
        _report(problems, args.format, stdout_taken=True)
        spool.seek(0)
        shutil.copyfileobj(spool, sys.stdout)
    return EXIT_OK


def _given(args: argparse.Namespace):
    """What the command line adds to the profiles (load/given.py), or an exit code."""
    # start-up: the loader (PyYAML) only for a command that reads profiles
    from lwsgen.load.given import STDIN, Given
    from lwsgen.load.source import MAX_PROFILE_BYTES

    if args.paths.count(STDIN) > 1:
        sys.stderr.write("lwsgen render: - (standard input) may be given once\n")
        return EXIT_USAGE
    if args.root is not None and not Path(args.root).is_dir():
        sys.stderr.write(f"lwsgen render: --root {_safe(args.root)} is not a directory\n")
        return EXIT_USAGE
    stdin = None
    if STDIN in args.paths:
        raw = sys.stdin.buffer.read(MAX_PROFILE_BYTES + 1)
        if len(raw) > MAX_PROFILE_BYTES:
            sys.stderr.write(f"<stdin>: is more than {MAX_PROFILE_BYTES} bytes; a profile is at most that\n")
            return EXIT_INVALID
        stdin = raw
    sets = tuple(("--set", a) for a in args.set)
    defaults = tuple(("--default", a) for a in args.default)
    return Given(args.root, stdin, sets, defaults)


def _say_orphans(orphans: list, kept: list, out) -> None:
    """What became of the output directories no profile renders any more."""
    held = {orphan.directory: names for orphan, names in kept}
    for orphan in orphans:
        where = _safe(str(orphan.directory))
        if orphan.directory in held:
            sys.stderr.write(
                f"lwsgen render: {where}/: no profile renders it any more, but it holds "
                f"{_safe(', '.join(held[orphan.directory]))}, which lwsgen did not write; not removed "
                "(--force removes files lwsgen did not write, never a directory)\n"
            )
        else:
            out.write(
                f"{where}/: removed (rendered from {_safe(orphan.source)}, which renders it no more; --keep keeps)\n"
            )


def _shape(profile) -> str:
    """One group's shape, or each role's: 'prefill: group of 2 pods x 8 GPUs, world size 16; decode: ...'."""
    if profile.roles:
        return "; ".join(f"{role}: {_shape(p)}" for role, p in profile.roles.items())
    p = profile
    pods = "pod" if p.group_size == 1 else "pods"
    gpus = "GPU" if p.gpus_per_pod == 1 else "GPUs"
    return f"group of {p.group_size} {pods} x {p.gpus_per_pod} {gpus}, world size {p.world_size}"


def _validate(args: argparse.Namespace) -> int:
    # start-up: validate's checks load for validate only
    from lwsgen.commands import validate as validate_paths

    # start-up: schema files are listed by validate only
    from lwsgen.kubeschemas import available_versions

    if args.kubernetes_version not in available_versions():
        sys.stderr.write(
            f"lwsgen validate: no schemas for Kubernetes {args.kubernetes_version}; "
            f"available: {', '.join(available_versions())}\n"
        )
        return EXIT_USAGE
    # start-up: the CEL interpreter only with --crd
    from lwsgen.output.crd import CRDError

    try:
        report = validate_paths.run(args.paths, args.kubernetes_version, args.crd or [])
    except CRDError as err:
        sys.stderr.write(f"lwsgen validate: --crd {_safe(str(err))}\n")
        return EXIT_USAGE
    for kind, count in sorted(report.not_checked.items()):
        sys.stderr.write(f"lwsgen validate: not checked: {count} {kind} (no schema in lwsgen)\n")
    if report.cel_not_evaluated:
        sys.stderr.write(
            f"lwsgen validate: {report.cel_not_evaluated} CEL rules of the CRDs use functions the CEL "
            "library lacks and were not evaluated\n"
        )
    # validate's findings are its output: on stdout in every format, warnings among them
    sys.stdout.write(_formatted(report.problems + report.warnings, args.format))
    if report.problems:
        return EXIT_INVALID
    if args.format == "text":
        sys.stdout.write(f"{report.checked} document{'' if report.checked == 1 else 's'} valid\n")
    return EXIT_OK


def _formatted(problems: list, fmt: str) -> str:
    return FORMATTERS[fmt](problems)


def _plan(args: argparse.Namespace) -> int:
    # start-up: plan's tables load for plan only
    from lwsgen.commands import plan

    try:
        text, ok = plan.run(args)
    except plan.PlanError as err:
        sys.stderr.write(f"lwsgen plan: {err}\n")
        return EXIT_INVALID if not isinstance(err.__cause__, ValueError) else EXIT_USAGE
    sys.stdout.write(text)
    return EXIT_OK if ok else EXIT_INVALID


def _explain(args: argparse.Namespace) -> int:
    """One profile, or every profile of a directory (found as render finds them), each explained."""
    # start-up: explain's stages load for explain only
    from lwsgen.commands import discover, explain

    # start-up: the render stages (Jinja, schemas) load for explain only
    from lwsgen.pipeline import render_profile

    found, _ = discover.profiles([args.profile])
    if not found:
        sys.stderr.write(f"{_safe(args.profile)}: no profile found; name a profile or a directory that holds one\n")
        return EXIT_INVALID
    status = EXIT_OK
    for index, (path, shown) in enumerate(found):
        try:
            result = render_profile(path, display=shown)
        except ProblemsError as err:
            _report(err.problems, "text")
            status = EXIT_INVALID
            continue
        sys.stdout.write(
            ("\n" if index else "") + (explain.mermaid(result) if args.format == "mermaid" else explain.text(result))
        )
    return status


def _schema(args: argparse.Namespace) -> int:
    # start-up: the profile checks and the schema index (~7 ms) load for schema only
    from lwsgen import resources
    from lwsgen.check.schema import PARTIAL_SCHEMA, PROFILE_SCHEMA

    sys.stdout.write(resources.schema_bytes(PARTIAL_SCHEMA if args.partial else PROFILE_SCHEMA).decode("utf-8"))
    return EXIT_OK


def _argocd_generate(args: argparse.Namespace) -> int:
    # start-up: the plugin's reader loads for argocd-generate only
    from lwsgen.commands import argocd

    return argocd.generate(main)


COMMANDS = {
    "render": _render,
    "validate": _validate,
    "plan": _plan,
    "explain": _explain,
    "schema": _schema,
    "argocd-generate": _argocd_generate,
}


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:
        return int(exit_.code or 0)

    try:
        return COMMANDS[args.command](args)
    except ProblemsError as err:  # an input refused before any command-specific reporting (a walk)
        sys.stderr.write(format_text(err.problems))
        return EXIT_INVALID
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return EXIT_OK
    except Exception as err:  # a bug in lwsgen, not bad input: one line, traceback on request
        if os.environ.get("LWSGEN_DEBUG"):
            raise
        sys.stderr.write(f"lwsgen: internal error: {type(err).__name__}: {err} (set LWSGEN_DEBUG=1 for a traceback)\n")
        return EXIT_INTERNAL


def main_entry() -> None:
    # Collect garbage every 200,000 new objects instead of 700 (mypy does the same). A cold render
    # otherwise runs ~50 collections over the libraries' import-time objects, which live until exit:
    # ~8 ms that freed ~500 objects. Batches keep collecting, and their memory is unchanged.
    gc.set_threshold(200_000, 30, 30)
    code = main(sys.argv[1:])
    # The process ends here, so it skips interpreter teardown: that would free, object by object and
    # with full garbage collections, everything the imported libraries built (~20 ms, a sixth of a
    # cold render) for the OS to take back anyway. Every file lwsgen writes is closed by now; the
    # standard streams are flushed here. No lwsgen code registers atexit handlers.
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BrokenPipeError:
            pass  # the reader went away: as in main, not an error of the render
    os._exit(code)
