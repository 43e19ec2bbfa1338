"""A picture of an example's Grafana dashboard, drawn from the series the dashboard test uses
(make dashboard-picture; docs/dashboard.png).

The input series are tests/test_dashboard.py's for the example (the pods of its groups, labelled as
the PodMonitor and kube-state-metrics label them; the engine's own series of tests/engine_series.py),
given two hours of values shaped like a load that rises and falls. Real Prometheus (Debian's
`prometheus`) holds them, `promtool tsdb create-blocks-from` backfills the raw series and then the
rendered PrometheusRule's records, and every panel's queries are asked over the two hours
(query_range) exactly as the dashboard JSON has them, $__rate_interval as 4 steps. matplotlib draws
the panels in the dashboard's own grid.

    python tools/dashboard_picture.py [example] [out.png]
"""

from __future__ import annotations

import json
import math
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT)]

import yaml  # noqa: E402

from test_alerts import World  # noqa: E402
from test_dashboard import Series, _dashboard, _records  # noqa: E402

STEP, POINTS = 60, 121  # two hours a minute apart
SERIES = re.compile(r"^([^{]+)\{(.*)\}$")


def load(t: int) -> float:
    """Clients in flight at minute t: a morning ramp, a peak, a fall (0..12)."""
    return max(0.0, 12 * math.sin(math.pi * t / (POINTS - 1)) ** 2 + 1.5 * math.sin(t / 5))


def values(name: str, labels: dict[str, str]) -> list[float]:
    """A series' two hours, by what the metric is (the load drives them all)."""
    out, total = [], 0.0
    for t in range(POINTS):
        clients = load(t)
        if name.endswith("_bucket"):
            le = float("inf") if labels["le"] == "+Inf" else float(labels["le"])
            latency = 0.05 + 0.04 * clients  # the median grows with the load
            share = 1.0 if le == float("inf") else 1 / (1 + math.exp(-(le - latency) / (0.3 * latency)))
            total += 2 * clients * 60 * share
            out.append(total)
        elif name.endswith(("_total", "_count", "_sum")) or name.startswith("nv_inference"):
            total += (clients * (0.3 if name.endswith("_sum") else 2)) * 60
            out.append(total)
        elif "waiting" in name or "queue" in name:
            out.append(max(0.0, round(clients - 8)))
        elif "running" in name:
            out.append(min(8.0, round(clients)))
        elif "kv_cache" in name or "token_usage" in name:
            out.append(min(0.97, 0.1 + clients / 12))
        elif name == "DCGM_FI_DEV_GPU_UTIL":
            out.append(min(100.0, 20 + 7 * clients))
        elif name == "kube_pod_status_ready":
            late = labels["pod"].endswith("-0-1")  # the worker joins late: the group forms at minute 15
            out.append(0.0 if late and t < 15 else 1.0)
        elif name == "kube_horizontalpodautoscaler_spec_max_replicas":
            out.append(4.0)
        elif name == "kube_horizontalpodautoscaler_status_desired_replicas":
            out.append(2.0 if t < 40 else 3.0)
        elif name.startswith("kube_horizontalpodautoscaler_status"):
            out.append(2.0 if t < 48 else 3.0)  # the new group is whole a few minutes later
        else:
            out.append(1.0)
    return out


def openmetrics(series: list[dict], end: int) -> str:
    lines = []
    for entry in series:
        name, inner = SERIES.match(entry["series"]).groups()
        pairs = re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', inner)
        text = ",".join(f'{k}="{v}"' for k, v in pairs)  # OpenMetrics: no space after a comma
        for t, value in enumerate(values(name, dict(pairs))):
            lines.append(f"{name}{{{text}}} {value} {end - (POINTS - 1 - t) * STEP}")
    return "\n".join(lines) + "\n# EOF\n"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Prometheus:
    def __init__(self, data: Path, config: Path):
        self.port = free_port()
        self.proc = subprocess.Popen(
            [
                shutil.which("prometheus") or "/usr/bin/prometheus",
                f"--config.file={config}",
                f"--storage.tsdb.path={data}",
                f"--web.listen-address=127.0.0.1:{self.port}",
                "--storage.tsdb.retention.time=30d",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for _ in range(300):  # its own readiness, polled
            try:
                urllib.request.urlopen(f"{self.url}/-/ready", timeout=2)
                return
            except OSError:
                time.sleep(0.2)
        raise SystemExit("prometheus did not become ready")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def range(self, expr: str, start: int, end: int) -> list[dict]:
        query = urllib.parse.urlencode({"query": expr, "start": start, "end": end, "step": STEP})
        answer = json.loads(urllib.request.urlopen(f"{self.url}/api/v1/query_range?{query}", timeout=60).read())
        return answer["data"]["result"]

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(30)


def backfill(world: World, board: dict, work: Path, end: int) -> tuple[Path, Path]:
    rules = _records(world)
    (work / "rules.yaml").write_text(yaml.safe_dump({"groups": rules}, sort_keys=False), encoding="utf-8")
    series = Series(world).of(world.profile.runtime)
    (work / "input.om").write_text(openmetrics(series, end), encoding="utf-8")
    data = work / "data"
    promtool = shutil.which("promtool") or "/usr/bin/promtool"
    subprocess.run(
        [promtool, "tsdb", "create-blocks-from", "openmetrics", "-q", str(work / "input.om"), str(data)], check=True
    )
    config = work / "prometheus.yml"
    config.write_text("global: {scrape_interval: 1m}\n", encoding="utf-8")
    return data, config


def picture(example: str, out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    world = World(example)
    board = _dashboard(example)[1]
    end = (int(time.time()) // STEP - 10) * STEP
    start = end - (POINTS - 1) * STEP
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        data, config = backfill(world, board, work, end)
        prom = Prometheus(data, config)
        try:
            subprocess.run(
                [shutil.which("promtool") or "/usr/bin/promtool", "tsdb", "create-blocks-from", "rules", "-q",
                 f"--start={start}", f"--end={end}", f"--eval-interval={STEP}s", f"--url={prom.url}",
                 f"--output-dir={work / 'records'}", str(work / "rules.yaml")],
                check=True, cwd=work,
            )  # fmt: skip
        finally:
            prom.stop()
        for block in (work / "records").iterdir():
            shutil.move(str(block), data / block.name)
        prom = Prometheus(data, config)
        try:
            draw(plt, board, prom, start, end, out)
        finally:
            prom.stop()


def _legend(text: str, labels: dict[str, str]) -> str:
    """Grafana's legend format: {{label}} is the series' label."""
    return re.sub(r"\{\{\s*(\w+)\s*\}\}", lambda m: labels.get(m.group(1), ""), text)


def draw(plt, board: dict, prom: Prometheus, start: int, end: int, out: Path) -> None:
    panels = board["panels"]
    rows = max(p["gridPos"]["y"] + p["gridPos"]["h"] for p in panels)
    rows += 2  # the title's own line above the grid
    figure = plt.figure(figsize=(16, rows * 0.42), facecolor="#111217")
    figure.text(0.01, 1 - 0.8 / rows, board["title"], color="#d8d9da", fontsize=14)
    for panel in panels:
        g = panel["gridPos"]
        top = g["y"] + 2
        box = [g["x"] / 24 + 0.035, 1 - (top + g["h"]) / rows + 0.012, g["w"] / 24 - 0.045, g["h"] / rows - 0.045]
        if panel["type"] == "row":
            figure.text(0.01, 1 - (top + 0.8) / rows, panel["title"], color="#d8d9da", fontsize=12, weight="bold")
            continue
        axes = figure.add_axes(box, facecolor="#181b1f")
        axes.set_title(panel["title"], color="#d8d9da", fontsize=10, loc="left")
        axes.tick_params(colors="#8e8e8e", labelsize=7)
        for spine in axes.spines.values():
            spine.set_color("#2c3235")
        for target in panel["targets"]:
            expr = target["expr"].replace("$__rate_interval", f"{4 * STEP}s")
            for result in prom.range(expr, start, end):
                xs = [(float(t) - start) / 60 for t, _ in result["values"]]
                ys = [float(v) for _, v in result["values"]]
                legend = _legend(target["legendFormat"], result["metric"])
                axes.plot(xs, ys, linewidth=1.2, label=legend)
        axes.set_xlabel("minutes", color="#8e8e8e", fontsize=7)
        axes.set_ylim(bottom=0)
        if axes.lines:
            axes.legend(fontsize=7, facecolor="#181b1f", labelcolor="#d8d9da", edgecolor="#2c3235", loc="upper left")
        else:
            axes.text(0.5, 0.5, "No data", color="#8e8e8e", ha="center", transform=axes.transAxes)
    figure.savefig(out, dpi=80, facecolor=figure.get_facecolor())


def main(args: list[str]) -> int:
    example = args[0] if args else "vllm-llama31-405b"
    out = Path(args[1]) if len(args) > 1 else ROOT / "docs" / "dashboard.png"
    picture(example, out)
    print(f"{out}: {example}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
