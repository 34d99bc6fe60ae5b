"""A node's worth of ports (bench/README.md, "Node scale"): what each port
costs the daemon when a node carries 64 of them, and how the control and
metrics paths hold up as the ports multiply.

The daemon runs in a namespace of its own with a veth uplink (2 queues,
2 service threads), as on a node. Ports are added over the control socket up
to 64; at 1, 16 and 64 ports it measures:

- port.add latency: an extra port added and removed `--cycles` times, each
  call timed at the client (p50, p99);
- a metrics scrape: the body rendered afresh (1.1 s apart: the exposition
  is cached for a second), its time at the client (median of 5) and its
  series count;
- memory: the daemon's RSS and its mappings by kind (status -> resources);
  per idle port, (RSS at 64 - RSS at 1) / 63.

The ports wait for their frontend (server mode): the state a node's ports
are in between VMs, and the floor of what a port costs. A running guest's
memory is the guest's (shared, mapped by the daemon, not resident until
touched), its rings a few KiB.
"""

import json
import os
import shutil
import statistics
import subprocess
import tempfile
import time
import urllib.request

from xvtest import netns, prom
from xvtest.daemon import Daemon

PREFIX = "xvscale-"
METRICS = "127.0.0.1:19591"
COUNTS = (1, 16, 64)


def percentile(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


def scrape(node):
    """(seconds, body) of one GET /metrics from inside the namespace."""
    cmd = ["ip", "netns", "exec", node, "curl", "-sf", "--max-time", "10", "-o", "-",
           "-w", "\n%{time_total}", f"http://{METRICS}/metrics"]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=30, check=True).stdout
    body, _, seconds = out.rpartition("\n")
    return float(seconds), body + "\n" if not body.endswith("\n") else body


def series(body):
    return sum(len(f["samples"]) for f in prom.parse(body).values())


def measure(daemon, node, work, count, cycles):
    add_ms = []
    for i in range(cycles):
        name = "probe"
        start = time.perf_counter()
        daemon.call("port.add", name=name, socket=os.path.join(work, f"{name}.sock"),
                    mac="52:54:00:5e:ff:ff")
        add_ms.append((time.perf_counter() - start) * 1000)
        daemon.call("port.remove", name=name)
    times, count_series = [], None
    for _ in range(5):
        time.sleep(1.1)
        seconds, body = scrape(node)
        times.append(seconds * 1000)
        count_series = series(body)
    res = daemon.call("status")["resources"]
    return {
        "ports": count,
        "port_add_ms": {"p50": round(percentile(add_ms, 50), 2),
                        "p99": round(percentile(add_ms, 99), 2), "cycles": cycles},
        "scrape_ms": round(statistics.median(times), 2),
        "series": count_series,
        "rss_bytes": res["rss_bytes"],
        "mapped": res["mapped"],
        "fds": res["fds"]["total"],
    }


def run(args):
    """Runs the scenario; writes node_scale.json and prints the table."""
    pid = os.getpid()
    node, peer = f"{PREFIX}{pid}-node", f"{PREFIX}{pid}-peer"
    out = os.path.abspath(args.out or tempfile.mkdtemp(prefix="xdpvhost-node-scale-"))
    os.makedirs(out, exist_ok=True)
    work = tempfile.mkdtemp(prefix="xvscale-")  # socket paths stay short
    netns.remove_orphaned(PREFIX)
    results = []
    daemon = None
    try:
        for ns in (node, peer):
            netns.create(ns)
        netns.run("ip", "-n", node, "link", "add", "xvscale-n0", "numtxqueues", "2",
                  "numrxqueues", "2", "type", "veth", "peer", "name", "xvscale-p0",
                  "numtxqueues", "2", "numrxqueues", "2", "netns", peer)
        netns.run("ip", "-n", node, "link", "set", "xvscale-n0", "up")
        netns.run("ip", "-n", peer, "link", "set", "xvscale-p0", "up")
        config = {"threads": {"count": 2},
                  "uplinks": [{"name": "up0", "interface": "xvscale-n0", "bind": "copy",
                               "queues": [0, 1]}],
                  "metrics": {"listen": METRICS}, "log": {"level": "warn"}}
        daemon = Daemon(work, config, binary=args.xdpvhostd, netns=node, start_timeout=30)
        daemon.start()
        added = 0
        for count in COUNTS:
            while added < count:
                name = f"vm{added:02d}"
                daemon.call("port.add", name=name, socket=os.path.join(work, f"{name}.sock"),
                            mac=f"52:54:00:5e:00:{added:02x}", uplink="up0")
                added += 1
            results.append(measure(daemon, node, work, count, args.cycles))
            print(json.dumps(results[-1]), flush=True)
        first, last = results[0], results[-1]
        summary = {
            "rss_per_idle_port_kib": round((last["rss_bytes"] - first["rss_bytes"])
                                           / (last["ports"] - first["ports"]) / 1024, 1),
            "series_per_port": round((last["series"] - first["series"])
                                     / (last["ports"] - first["ports"]), 1),
        }
        problems = daemon.problems()
        daemon.stop()
    finally:
        if daemon and daemon.alive():
            daemon.kill()
        for ns in (node, peer):
            netns.delete(ns)
        shutil.rmtree(work, ignore_errors=True)
    report = {"results": results, "summary": summary, "problems": problems[:20]}
    with open(os.path.join(out, "node_scale.json"), "w") as f:
        json.dump(report, f, indent=1)
    print("| ports | port.add p50 / p99 (ms) | scrape (ms) | series | RSS (MiB) | fds |")
    print("|---|---|---|---|---|---|")
    for r in results:
        print(f"| {r['ports']} | {r['port_add_ms']['p50']} / {r['port_add_ms']['p99']} | "
              f"{r['scrape_ms']} | {r['series']} | {r['rss_bytes'] / 2**20:.1f} | {r['fds']} |")
    print(f"per idle port: {summary['rss_per_idle_port_kib']} KiB RSS, "
          f"{summary['series_per_port']} series; report {out}/node_scale.json")
    if problems:
        print(f"{len(problems)} warning or error lines in the daemon's log: {problems[:3]}")
        return 1
    return 0
