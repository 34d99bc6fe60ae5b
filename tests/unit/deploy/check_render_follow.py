"""render-config --follow, as the DaemonSet's `config` container runs it,
against a directory laid out as the kubelet lays out a ConfigMap volume (a
timestamped directory, the "..data" symlink renamed over the old one, the
files symlinks through it): a new version is rendered and OUT replaced by a
rename (what `xdpvhostd --follow-config` watches for), and passes
`xdpvhostd --check`; a version equal in effect leaves OUT alone; a broken
one leaves OUT as it is and is logged once; 2000 rounds hold no fd and no
heap; SIGTERM ends it with status 0. No root needed."""

import contextlib
import gc
import importlib.machinery
import importlib.util
import io
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import tracemalloc

daemon, deploy = sys.argv[1], sys.argv[2]
BASE = os.path.join(deploy, "kubernetes", "base")

loader = importlib.machinery.SourceFileLoader("render_config", os.path.join(deploy, "render-config"))
spec = importlib.util.spec_from_loader("render_config", loader)
rc = importlib.util.module_from_spec(spec)
loader.exec_module(rc)


class ConfigMapVolume:
    def __init__(self, root):
        self.root = root
        self.version = 0

    def publish(self, files):
        self.version += 1
        stamp = f"..2026_12_07_02_00_00.{self.version}"
        os.makedirs(os.path.join(self.root, stamp))
        for name, text in files.items():
            with open(os.path.join(self.root, stamp, name), "w") as f:
                f.write(text)
        old = os.path.realpath(os.path.join(self.root, "..data")) if self.version > 1 else None
        os.symlink(stamp, os.path.join(self.root, "..data_tmp"))
        os.rename(os.path.join(self.root, "..data_tmp"), os.path.join(self.root, "..data"))
        for name in files:
            if not os.path.islink(os.path.join(self.root, name)):
                os.symlink(os.path.join("..data", name), os.path.join(self.root, name))
        if old:
            for name in os.listdir(old):
                os.unlink(os.path.join(old, name))
            os.rmdir(old)


def fds():
    return len(os.listdir("/proc/self/fd"))


def main():
    failures = []
    checks = []

    def check(what, ok, detail=""):
        checks.append(what)
        print(f"{'ok  ' if ok else 'FAIL'} {what}" + (f": {detail}" if detail and not ok else ""))
        if not ok:
            failures.append(what)

    with tempfile.TemporaryDirectory(prefix="xvrf-") as tmp:
        cm = os.path.join(tmp, "template")
        os.makedirs(cm)
        volume = ConfigMapVolume(cm)
        with open(os.path.join(BASE, "config.json")) as f:
            base = json.load(f)
        volume.publish({"config.json": json.dumps(base), "uplink-interfaces": ""})
        out = os.path.join(tmp, "config.json")
        a = rc.parse_args(["--node-ip", "192.0.2.10", "--interfaces-file", os.path.join(cm, "uplink-interfaces"),
                           "--follow", "0", os.path.join(cm, "config.json"), out])
        with contextlib.redirect_stdout(io.StringIO()):
            rc.main(["--node-ip", "192.0.2.10", os.path.join(cm, "config.json"), out])
        first = os.stat(out).st_ino

        # Equal in effect (re-serialised): OUT is not touched.
        volume.publish({"config.json": json.dumps(base, indent=4), "uplink-interfaces": "\n"})
        with contextlib.redirect_stdout(io.StringIO()) as said:
            rc.follow(a, 0, rounds=3, sleep=lambda s: None)
        check("an equal version leaves OUT alone", os.stat(out).st_ino == first and said.getvalue() == "",
              said.getvalue())

        # A new version: rendered, OUT renamed over, accepted by the daemon.
        v2 = dict(base, tunables={"busy_poll_us": 20, "signal_batch": 32})
        volume.publish({"config.json": json.dumps(v2), "uplink-interfaces": ""})
        with contextlib.redirect_stdout(io.StringIO()) as said:
            rc.follow(a, 0, rounds=1, sleep=lambda s: None)
        with open(out) as f:
            rendered = json.load(f)
        check("a new version replaces OUT by a rename",
              os.stat(out).st_ino != first and rendered["tunables"]["busy_poll_us"] == 20
              and rendered["metrics"]["listen"] == "192.0.2.10:9477", json.dumps(rendered))
        check("the change is logged", "changed: metrics.listen '192.0.2.10:9477'" in said.getvalue(),
              said.getvalue())
        r = subprocess.run([daemon, "--check", "--config", out], capture_output=True, text=True)
        check("xdpvhostd --check accepts it", r.returncode == 0, r.stderr)

        # A broken version: OUT stays, one message until it changes.
        volume.publish({"config.json": '{"uplinks": [', "uplink-interfaces": ""})
        with contextlib.redirect_stderr(io.StringIO()) as said:
            rc.follow(a, 0, rounds=5, sleep=lambda s: None)
        with open(out) as f:
            check("a broken version leaves OUT as it was", json.load(f) == rendered)
        check("and is logged once", said.getvalue().count("left as it is") == 1, said.getvalue())

        # 2000 rounds, a new version every 100th: no fd and no heap kept.
        volume.publish({"config.json": json.dumps(v2), "uplink-interfaces": ""})
        rounds = {"n": 0}

        def sleep(_):
            rounds["n"] += 1
            if rounds["n"] % 100 == 0:
                v = dict(v2, tunables={"busy_poll_us": rounds["n"] // 100, "signal_batch": 32})
                volume.publish({"config.json": json.dumps(v), "uplink-interfaces": ""})

        with contextlib.redirect_stdout(io.StringIO()):
            rc.follow(a, 0, rounds=100, sleep=sleep)  # warm up
            before_fds = fds()
            tracemalloc.start()
            gc.collect()  # the json encoder's closures are cycles: garbage, not kept
            heap_before = tracemalloc.get_traced_memory()[0]
            rc.follow(a, 0, rounds=2000, sleep=sleep)
            gc.collect()
            heap_after = tracemalloc.get_traced_memory()[0]
            tracemalloc.stop()
        with open(out) as f:
            check("2000 rounds follow every version", json.load(f)["tunables"]["busy_poll_us"] == 21)
        check("2000 rounds hold no fd", fds() == before_fds, f"{before_fds} -> {fds()}")
        check("2000 rounds hold no heap", heap_after - heap_before < 64 * 1024,
              f"{heap_after - heap_before} bytes")

        # As the container runs it: SIGTERM ends it, status 0.
        p = subprocess.Popen([os.path.join(deploy, "render-config"), "--node-ip", "192.0.2.10",
                              "--follow", "0.05", os.path.join(cm, "config.json"), out],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(0.5)
        p.send_signal(signal.SIGTERM)
        try:
            code = p.wait(10)
        except subprocess.TimeoutExpired:
            p.kill()
            code = None
        check("SIGTERM ends --follow with status 0", code == 0, f"{code}: {p.stderr.read()}")

    print(f"{len(checks) - len(failures)} passed, {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
