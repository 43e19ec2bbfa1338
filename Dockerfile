# lwsgen as a container image: the command line and its package data, nothing else; used by the CI
# example (docs/github-actions.yml) and as the base of the Argo CD plugin sidecar (docs/argocd/).
#   docker build -t lwsgen:0.1.0 .
#   docker run --rm -v "$PWD:/work" lwsgen:0.1.0 render profiles -o out --check
# Runs as an unprivileged user with a read-only-friendly environment (no cache, no bytecode writes).
FROM python:3.12-slim AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY lwsgen lwsgen
COPY templates templates
COPY schemas schemas
COPY tools/build_hooks.py tools/build_hooks.py
RUN pip wheel --no-cache-dir --no-deps --wheel-dir /dist .

FROM python:3.12-slim
COPY --from=build /dist/ /tmp/dist/
RUN pip install --no-cache-dir /tmp/dist/lwsgen-0.1.0-py3-none-any.whl \
    && rm -rf /tmp/dist \
    && useradd --no-log-init --uid 65532 --no-create-home --home-dir /nonexistent lwsgen
USER 65532
ENV LWSGEN_NO_CACHE=1 PYTHONDONTWRITEBYTECODE=1
WORKDIR /work
ENTRYPOINT ["lwsgen"]
CMD ["--help"]
