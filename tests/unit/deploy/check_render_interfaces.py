"""render-config's interfaces file, run as the DaemonSet's init container
runs it (in the node's network namespace), in a namespace of its own made
here with veths named like two node pools' NICs: a name, a pattern and
`default-route` each choose what they should, in order; a rule that
matches nothing or names no uplink of the config fails, naming what is
there; every rendering passes `xdpvhostd --check`. Needs root (a network
namespace); exits 77 (skipped) without it. The namespace is deleted also
on failure."""

import json
import os
import subprocess
import sys
import tempfile

daemon, deploy = sys.argv[1], sys.argv[2]
NS = f"xvrc-{os.getpid()}"
CONFIG = os.path.join(deploy, "kubernetes", "base", "config.json")


def ip(*args):
    subprocess.run(["ip", *args], check=True, capture_output=True)


def render(workdir, rules):
    """(returncode, output, rendered config or None) of render-config with `rules`."""
    path = os.path.join(workdir, "uplink-interfaces")
    with open(path, "w") as f:
        f.write(rules)
    out = os.path.join(workdir, "config.json")
    if os.path.exists(out):
        os.unlink(out)
    r = subprocess.run(["ip", "netns", "exec", NS, f"{deploy}/render-config", "--node-ip", "192.0.2.10",
                        "--interfaces-file", path, CONFIG, out], capture_output=True, text=True)
    rendered = None
    if r.returncode == 0:
        with open(out) as f:
            rendered = json.load(f)
        check = subprocess.run([daemon, "--check", "--config", out], capture_output=True, text=True)
        if check.returncode != 0:
            return 99, f"xdpvhostd --check refused it: {check.stderr}", rendered
    return r.returncode, r.stdout + r.stderr, rendered


def main():
    if os.geteuid() != 0:
        print("needs root (a network namespace): skipped")
        return 77
    cases = [
        # (rules, interface chosen or None for an error, text the output must have)
        ("up0: eth1\n", None, "none of eth1 is an interface of this node"),
        ("# pool A: Intel, pool B: Mellanox\nup0: eth1 ens1f0np0 enp3s0f0\n", "ens1f0np0", "(name)"),
        ("up0: eth1 enp*s0f0  # the first in name order\n", "enp3s0f0", "(pattern enp*s0f0)"),
        ("up0: eth1 default-route\n", "eno1", "(default-route)"),
        ("up0: default-route ens1f0np0\n", "eno1", "(default-route)"),
        ("up1: ens1f0np0\n", None, "uplink 'up1' is not in"),
        ("up0 ens1f0np0\n", None, "want 'UPLINK: CANDIDATE ...'"),
        ("", "eth1", ""),  # no rule: the config's own interface
    ]
    failed = 0
    subprocess.run(["ip", "netns", "delete", NS], capture_output=True)
    try:
        ip("netns", "add", NS)
        for name, peer in (("ens1f0np0", "p1"), ("enp3s0f0", "p2"), ("enp5s0f0", "p3"), ("eno1", "p4")):
            ip("-n", NS, "link", "add", name, "type", "veth", "peer", "name", peer)
            ip("-n", NS, "link", "set", name, "up")
            ip("-n", NS, "link", "set", peer, "up")
        ip("-n", NS, "addr", "add", "10.99.4.1/24", "dev", "eno1")
        ip("-n", NS, "route", "add", "default", "via", "10.99.4.254", "dev", "eno1")
        with tempfile.TemporaryDirectory() as workdir:
            for rules, wanted, text in cases:
                rc, output, rendered = render(workdir, rules)
                got = rendered["uplinks"][0]["interface"] if rendered else None
                ok = (rc == 0) == (wanted is not None) and got == wanted and text in output
                print(f"{'ok' if ok else 'FAILED'}: {rules.strip()!r} -> rc {rc}, interface {got!r}: "
                      f"{output.strip()}")
                failed += not ok
    finally:
        subprocess.run(["ip", "netns", "delete", NS], capture_output=True)
    print(f"{len(cases) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
