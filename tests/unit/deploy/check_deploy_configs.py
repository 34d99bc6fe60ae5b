"""The configs shipped in deploy/ (the image's default and the DaemonSet's
ConfigMap) are accepted by the daemon's own validation (xdpvhostd --check)."""

import subprocess
import sys
import tempfile

import yaml

daemon, deploy = sys.argv[1], sys.argv[2]
configs = {"deploy/config.json": open(f"{deploy}/config.json").read()}
for doc in yaml.safe_load_all(open(f"{deploy}/daemonset.yaml")):
    if doc and doc.get("kind") == "ConfigMap":
        configs["deploy/daemonset.yaml ConfigMap"] = doc["data"]["config.json"]
assert len(configs) == 2, configs.keys()
failed = 0
for name, text in configs.items():
    with tempfile.NamedTemporaryFile("w", suffix=".json") as f:
        f.write(text)
        f.flush()
        r = subprocess.run([daemon, "--check", "--config", f.name], capture_output=True, text=True)
    print(f"{name}: {'ok' if r.returncode == 0 else 'REJECTED'} {r.stdout.strip()} {r.stderr.strip()}")
    failed += r.returncode != 0
sys.exit(1 if failed else 0)
