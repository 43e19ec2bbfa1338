#!/bin/bash
# The attacks of the safety issue, one line each: what lwsgen did. `bash tools/attacks.sh [TREE]` runs them
# against the lwsgen package in TREE (default: this checkout; an old checkout gives the "before").
P=$(cd "${1:-.}" && pwd); PY=${PY:-$(cd "$(dirname "$0")/.." && pwd)/.venv/bin/python}; W=$(mktemp -d); cd $W; git init -q .
L() { PYTHONPATH=$P timeout ${T:-20} "$PY" -m lwsgen "$@"; }
base='name: demo
runtime: vllm
image: vllm/vllm-openai:v0.8.5
model: {path: m}
parallelism: {tensor: 8, pipeline: 2}
node: {gpus: 8}
monitoring: {enabled: false}
service: {type: ClusterIP}'
echo "$base" > p.yaml
r() { "$@" > out.txt 2> err.txt; echo $?; }
# 1 link planted at an output file
rm -rf out; L render p.yaml -o out >/dev/null 2>&1; echo precious > victim; rm out/demo/service.yaml; ln -s $W/victim out/demo/service.yaml
echo "$base" | sed 's/tensor: 8/tensor: 16/' > p2.yaml; sed -i 's/pipeline: 2/pipeline: 1/' p2.yaml
c=$(r L render p2.yaml -o out); echo "link at OUT/demo/service.yaml: exit $c, victim $( [ "$(cat victim)" = precious ] && echo kept || echo OVERWRITTEN), service.yaml $( [ -L out/demo/service.yaml ] && echo 'still a link' || echo 'a file')"
# 2 symlinked OUT/<name>
rm -rf out elsewhere; mkdir -p out elsewhere; ln -s $W/elsewhere out/demo
c=$(r L render p.yaml -o out); echo "symlinked OUT/demo: exit $c, written elsewhere: $(ls elsewhere | wc -l) files"
# 3 symlinked lock
rm -rf out; mkdir -p tmpd; lock=$(PYTHONPATH=$P TMPDIR=$W/tmpd "$PY" -c "import sys; from pathlib import Path; from lwsgen.$( [ -d $P/lwsgen/output ] && echo output. )write import lock_path; print(lock_path(Path('out')))"); ln -s $W/created-via-lock $lock
c=$(TMPDIR=$W/tmpd r L render p.yaml -o out); echo "symlinked lock: exit $c, link target created: $( [ -e created-via-lock ] && echo YES || echo no)"
# 4 foreign file
rm -rf out; L render p.yaml -o out >/dev/null 2>&1; echo '# mine' > out/demo/podmonitor.yaml; sed 's/enabled: false/enabled: true/' p.yaml > pm.yaml
c=$(r L render pm.yaml -o out); echo "own podmonitor.yaml, then monitoring on: exit $c, file $(grep -q '# mine' out/demo/podmonitor.yaml && echo kept || echo OVERWRITTEN)"
c=$(r L render p.yaml -o out); echo "  then monitoring off again: exit $c, file $( [ -e out/demo/podmonitor.yaml ] && echo kept || echo DELETED)"
# 7 alias bomb
printf 'a: &a ["x","x","x","x","x","x","x","x","x"]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\ne: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]\nf: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]\ng: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]\nh: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]\ni: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]\n' > bomb.yaml
s=$(date +%s%N); c=$(T=10 r L render bomb.yaml -o out2); e=$(date +%s%N); echo "alias bomb (342 bytes): exit $c in $(( (e-s)/1000000 )) ms (124 = killed at 10 s)"
# 8 FIFO
mkfifo fifo.yaml; c=$(T=5 r L render fifo.yaml -o out2); echo "FIFO as profile: exit $c (124 = hung, killed at 5 s)"
# 9 extends chain of 1000
mkdir -p chain; cp p.yaml chain/p0.yaml; for i in $(seq 1 1000); do echo "extends: p$((i-1)).yaml" > chain/p$i.yaml; done
c=$(r L render chain/p1000.yaml -o out2); echo "extends chain of 1000: exit $c"
# 10 5000-digit integer
echo "$base" | sed "s/gpus: 8/gpus: $(python3 -c 'print("9"*5000)')/" > big.yaml; c=$(r L render big.yaml -o out2); echo "5000-digit integer: exit $c"
# 11 gpus 8.0
echo "$base" | sed 's/gpus: 8}/gpus: 8.0}/' > f.yaml; c=$(r L render f.yaml --stdout); echo "node.gpus: 8.0: exit $c $(grep -o 'size: [0-9.]*' out.txt | head -1)"
# 12 extends /etc/passwd
printf 'extends: /etc/passwd\nname: x\n' > e.yaml; c=$(r L render e.yaml -o out2 --format github); echo "extends: /etc/passwd: exit $c, echoes it: $(grep -q 'root' err.txt out.txt && echo YES || echo no)"
# 13 DEL and U+FFFE
echo "$base" > d.yaml; echo 'annotations: {note: "a\x7fb\ufffe"}' >> d.yaml; c=$(r L render d.yaml -o out3); echo "DEL and U+FFFE in a string: exit $c"
# 14 300 KB annotation
echo "$base" > a.yaml; echo "annotations: {big: $(python3 -c 'print("x"*300000)')}" >> a.yaml; c=$(r L render a.yaml -o out4); echo "300 KB annotation: exit $c"
# 15 64-char label name
echo "$base" > l.yaml; echo "labels: {$(python3 -c 'print("x"*64)'): v}" >> l.yaml; c=$(r L render l.yaml -o out5); echo "64-character label name: exit $c"
# 16 $(HF_TOKEN)
echo "$base" | sed 's/model: {path: m}/model: {path: m, servedName: "$(HF_TOKEN)", tokenSecret: {name: hf, key: t}}/' > t.yaml; c=$(r L render t.yaml --stdout); echo "servedName \$(HF_TOKEN): exit $c, written as $(grep -o -- '- .*(HF_TOKEN)' out.txt | head -1)"
# 17 OUT is a file
touch outfile; c=$(r L render p.yaml -o outfile); echo "OUT is a file: exit $c $(grep -c 'internal error' err.txt) internal errors"
# 18-20 fencing
sed 's/service: {type: ClusterIP}/service: {type: LoadBalancer}\nncclTest: {enabled: true, launcher: job, image: "nvcr.io\/nvidia\/pytorch:24.07-py3"}/' p.yaml > n.yaml
c=$(r L render n.yaml --stdout); echo "NCCL test pods: exit $c, NetworkPolicies selecting them: $(grep -c 'app.kubernetes.io/component: nccl-test' out.txt) label hits, policies in stream $(grep -c '^kind: NetworkPolicy' out.txt)"
echo "  open LoadBalancer: warned: $(grep -q 'LoadBalancer with no' err.txt && echo yes || echo NO)"
sed 's/runtime: vllm/runtime: triton-trtllm/; s#vllm/vllm-openai:v0.8.5#nvcr.io/nvidia/tritonserver:24.07-trtllm-python-py3#; s#path: m#path: /m#' p.yaml > tr.yaml; c=$(r L render tr.yaml --stdout); echo "pods/exec rule: exit $c, resourceNames: $(grep -c 'resourceNames' out.txt)"
# 21 ESC and newline in a key
printf '%s\nenv: {"A\\nfake.yaml:1:1: fine\\u001b[2J": x}\n' "$base" > k.yaml; c=$(r L render k.yaml -o out6); echo "newline and ESC in a key: exit $c, raw ESC in output: $(grep -c $'\x1b' err.txt) lines, output lines $(wc -l < err.txt)"
# 22 lock held
rm -rf out7; PYTHONPATH=$P "$PY" -c "
import sys,time,fcntl; from pathlib import Path
from lwsgen.$( [ -d $P/lwsgen/output ] && echo output. )write import lock_path
f=open(lock_path(Path('out7')),'a'); fcntl.flock(f, fcntl.LOCK_EX); print('held', flush=True); time.sleep(30)" > held.txt & hp=$!; sleep 1
s=$(date +%s); c=$(T=15 r L render p.yaml -o out7 $( [ -d $P/lwsgen/output ] && echo --lock-timeout 2 )); e=$(date +%s); kill $hp 2>/dev/null; echo "lock held by another process: exit $c after $((e-s)) s (124 = killed at 15 s)"
