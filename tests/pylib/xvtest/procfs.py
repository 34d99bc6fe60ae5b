"""What /proc says about one process: open fds (and of which kind), memory
(VmRSS, RssAnon, RssShmem, VmSize in KiB), guest-memory (memfd) mappings, and
the TCP sockets it listens on. For leak checks and listener checks."""

import os
import re

_STATUS_FIELDS = {"VmRSS:": "rss_kb", "RssAnon:": "anon_kb", "RssShmem:": "shmem_kb",
                  "VmSize:": "vsz_kb"}


def fd_count(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def _fd_kind(target):
    if target.startswith("/memfd:"):
        return "memfd"
    if target.startswith("anon_inode:"):
        return target.split(":", 1)[1].strip("[]")
    return re.sub(r"[:/].*$", "", target.lstrip("/"))


def resources(pid):
    """{"fds", "fd_kinds", "rss_kb", "anon_kb", "shmem_kb", "vsz_kb", "memfd_maps"};
    what cannot be read (pid None, or the process is gone) stays None.
    RssShmem grows while a backend writes into pages of a guest's memory it
    had not touched before; RssAnon is the process's own heap and stacks."""
    out = {"fds": None, "fd_kinds": {}, "memfd_maps": None,
           **{key: None for key in _STATUS_FIELDS.values()}}
    if pid is None:
        return out
    try:
        kinds = {}
        names = os.listdir(f"/proc/{pid}/fd")
        for n in names:
            try:
                kind = _fd_kind(os.readlink(f"/proc/{pid}/fd/{n}"))
            except OSError:
                continue
            kinds[kind] = kinds.get(kind, 0) + 1
        out["fds"] = len(names)
        out["fd_kinds"] = dict(sorted(kinds.items()))
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                key = line.split(None, 1)[0] if line.strip() else ""
                if key in _STATUS_FIELDS:
                    out[_STATUS_FIELDS[key]] = int(line.split()[1])
        with open(f"/proc/{pid}/maps") as f:
            out["memfd_maps"] = sum(1 for line in f if "/memfd:" in line)
    except OSError:
        pass
    return out


def _socket_inodes(pid):
    """Inodes of the sockets process `pid` holds."""
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    return inodes


def accepted_tcp_connections(pid, port):
    """How many established TCP connections process `pid` holds on its local
    port `port` (IPv4): the ones it accepted."""
    inodes = _socket_inodes(pid)
    count = 0
    with open("/proc/net/tcp") as f:
        for line in f.readlines()[1:]:
            fields = line.split()
            if (fields[3] == "01" and int(fields[1].split(":")[1], 16) == port
                    and fields[9] in inodes):
                count += 1
    return count


def listening_tcp_sockets(pid):
    """Inodes of the TCP sockets in LISTEN state that process `pid` holds."""
    inodes = _socket_inodes(pid)
    listening = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as f:
            for line in f.readlines()[1:]:
                fields = line.split()
                if fields[3] == "0A" and fields[9] in inodes:
                    listening.append(fields[9])
    return listening
