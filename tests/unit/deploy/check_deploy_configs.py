"""The configs shipped in deploy/ are accepted by the daemon's own
validation (xdpvhostd --check): the image's default (deploy/config.json),
the DaemonSet's ConfigMap source (deploy/kubernetes/base/config.json), and
that one as the DaemonSet's init container renders it for a node
(deploy/render-config, IPv4 and IPv6 node addresses). None of them listens
for metrics on every address: the shipped ones on loopback, the rendered
ones on the node's address only."""

import json
import os
import subprocess
import sys
import tempfile

daemon, deploy = sys.argv[1], sys.argv[2]


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


configs = {
    "deploy/config.json": read(f"{deploy}/config.json"),
    "deploy/kubernetes/base/config.json": read(f"{deploy}/kubernetes/base/config.json"),
}
expected_listen = {name: "127.0.0.1:9477" for name in configs}
with tempfile.TemporaryDirectory() as d:
    for ip, listen in (("192.0.2.10", "192.0.2.10:9477"), ("2001:db8::10", "[2001:db8::10]:9477")):
        out = os.path.join(d, "config.json")
        subprocess.run([f"{deploy}/render-config", "--node-ip", ip,
                        f"{deploy}/kubernetes/base/config.json", out], check=True)
        name = f"render-config --node-ip {ip}"
        configs[name] = read(out)
        expected_listen[name] = listen
failed = 0
for name, text in configs.items():
    listen = json.loads(text).get("metrics", {}).get("listen", "")
    with tempfile.NamedTemporaryFile("w", suffix=".json") as f:
        f.write(text)
        f.flush()
        r = subprocess.run([daemon, "--check", "--config", f.name], capture_output=True, text=True)
    ok = r.returncode == 0 and listen == expected_listen[name]
    print(f"{name}: {'ok' if ok else 'REJECTED'} metrics.listen={listen!r} "
          f"{r.stdout.strip()} {r.stderr.strip()}")
    failed += not ok
sys.exit(1 if failed else 0)
