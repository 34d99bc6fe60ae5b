"""Network namespaces and the commands run in them, for the suites that
build their own networks (tests/control, tests/e2e, tests/kubevirt, bench):
run a command (argv, no shell) with its output captured, run it inside a
namespace, create and delete namespaces, join two with a veth pair, find
those a killed run left behind, keep bpffs mounted for a command that
`ip netns exec` starts, and make sockets inside a namespace from this
process (in_netns)."""

import ctypes
import os
import subprocess
import threading

_CLONE_NEWNET = 0x40000000


def in_netns(ns, fn):
    """fn() run by a thread that entered network namespace ns (setns changes
    only the calling thread), and its result: a socket made there stays
    in ns. ns None: this process's namespace."""
    result = {}

    def enter_and_run():
        try:
            if ns:
                libc = ctypes.CDLL(None, use_errno=True)
                fd = os.open(f"/run/netns/{ns}", os.O_RDONLY)
                try:
                    if libc.setns(fd, _CLONE_NEWNET) != 0:
                        raise OSError(ctypes.get_errno(), f"setns {ns}")
                finally:
                    os.close(fd)
            result["value"] = fn()
        except Exception as e:  # raised in the caller's thread
            result["error"] = e

    t = threading.Thread(target=enter_and_run)
    t.start()
    t.join()
    if "error" in result:
        raise result["error"]
    return result["value"]


def run(*cmd, check=True, timeout=60):
    """Runs cmd (argv, no shell) with stdout and stderr captured as text and
    returns the CompletedProcess; with check, a non-zero exit raises
    RuntimeError with what the command printed."""
    p = subprocess.run(list(cmd), capture_output=True, text=True, timeout=timeout)
    if check and p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: rc {p.returncode}: "
                           f"{p.stderr.strip() or p.stdout.strip()}")
    return p


def run_in(ns, *cmd, check=True, timeout=60):
    """run() inside network namespace ns (`ip netns exec`)."""
    return run("ip", "netns", "exec", ns, *cmd, check=check, timeout=timeout)


def delete(name):
    """Deletes a namespace if it exists (no error if it does not)."""
    subprocess.run(["ip", "netns", "delete", name], stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, check=False)


def create(name, ipv6=False):
    """A fresh namespace (one of the same name is deleted first) with
    loopback up and, unless ipv6, IPv6 off: no DAD, MLD or router
    solicitations then cross its links besides a test's own frames."""
    delete(name)
    run("ip", "netns", "add", name)
    if not ipv6:
        run_in(name, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1",
               "net.ipv6.conf.default.disable_ipv6=1")
    run("ip", "-n", name, "link", "set", "lo", "up")


def veth(ns, ifname, peer_ns, peer_ifname, *, peer_mac=None, mtu=None):
    """A veth pair from `ifname` in namespace ns to `peer_ifname` in peer_ns
    (with that MAC address and both ends with that MTU, if given), both up."""
    mtu_args = ["mtu", str(mtu)] if mtu else []
    run("ip", "-n", ns, "link", "add", ifname, *mtu_args, "type", "veth", "peer", "name",
        peer_ifname, *(["address", peer_mac] if peer_mac else []), *mtu_args, "netns", peer_ns)
    run("ip", "-n", ns, "link", "set", ifname, "up")
    run("ip", "-n", peer_ns, "link", "set", peer_ifname, "up")


def names(prefix=""):
    """The namespaces whose names start with prefix."""
    out = run("ip", "netns", "list", check=False).stdout
    return [line.split()[0] for line in out.splitlines() if line.startswith(prefix)]


def remove_orphaned(prefix):
    """Deletes the namespaces named <prefix><pid>-... whose process is gone
    (left by a run that was killed)."""
    for ns in names(prefix):
        pid = ns[len(prefix):].split("-", 1)[0]
        if pid.isdigit() and "-" in ns[len(prefix):] and not os.path.exists(f"/proc/{pid}"):
            delete(ns)


def with_bpffs(cmd):
    """cmd run with bpffs mounted: `ip netns exec` gives every command a
    fresh mount namespace with /sys remounted, which hides bpffs."""
    return ["sh", "-c", "mountpoint -q /sys/fs/bpf || mount -t bpf bpf /sys/fs/bpf; exec \"$@\"",
            "with-bpffs"] + list(cmd)
