"""What a node holds beyond the daemon's own ledger, counted from outside it
so that a leak the daemon cannot see shows too:

- the kernel's BPF programs and maps, system-wide, by id (the bpf(2) calls
  BPF_PROG_GET_NEXT_ID and BPF_MAP_GET_NEXT_ID, as `bpftool prog list` walks
  them): a program or map a dead daemon left loaded stays in this list;
- the XDP programs attached to an interface (`ip -details link show`);
- the socket files in a directory;
- the network namespaces and the interfaces in one;
- a process's /proc/PID/smaps_rollup totals.

Every function returns plain data (ints, lists, dicts) for the soak's report.
"""

import ctypes
import errno
import json
import os
import platform
import subprocess

_SYS_BPF = {"x86_64": 321, "aarch64": 280}.get(platform.machine())
_BPF_PROG_GET_NEXT_ID = 11
_BPF_MAP_GET_NEXT_ID = 12
_libc = ctypes.CDLL(None, use_errno=True)


class _NextIdAttr(ctypes.Structure):
    # union bpf_attr, the *_GET_NEXT_ID member: start_id, next_id, open_flags
    _fields_ = [("start_id", ctypes.c_uint32), ("next_id", ctypes.c_uint32),
                ("open_flags", ctypes.c_uint32)]


def _bpf_ids(command):
    if _SYS_BPF is None:
        raise OSError(errno.ENOSYS, f"bpf(2) number unknown on {platform.machine()}")
    ids, attr = [], _NextIdAttr()
    while True:
        attr.next_id = 0
        if _libc.syscall(_SYS_BPF, command, ctypes.byref(attr), ctypes.sizeof(attr)) != 0:
            err = ctypes.get_errno()
            if err == errno.ENOENT:
                return ids
            raise OSError(err, os.strerror(err))
        ids.append(attr.next_id)
        attr.start_id = attr.next_id


def bpf_program_ids():
    """Ids of every BPF program loaded on the machine."""
    return _bpf_ids(_BPF_PROG_GET_NEXT_ID)


def bpf_map_ids():
    """Ids of every BPF map on the machine."""
    return _bpf_ids(_BPF_MAP_GET_NEXT_ID)


def xdp_attachments(netns, ifname):
    """The XDP program ids attached to ifname in netns, by mode: {} when none
    or when the interface does not exist."""
    p = subprocess.run(["ip", "-n", netns, "-details", "-json", "link", "show", "dev", ifname],
                       capture_output=True, text=True, timeout=30)
    if p.returncode != 0:
        return {}
    links = json.loads(p.stdout or "[]")
    xdp = (links[0] if links else {}).get("xdp") or {}
    attached = {}
    for entry in xdp.get("attached", []) or ([xdp] if "prog" in xdp else []):
        prog = entry.get("prog") or {}
        if "id" in prog:
            attached[str(entry.get("mode", xdp.get("mode", "?")))] = prog["id"]
    return attached


def socket_files(directory):
    """The names of the unix socket files in directory (sorted)."""
    try:
        names = os.listdir(directory)
    except FileNotFoundError:
        return []
    out = []
    for name in names:
        try:
            if os.path.stat.S_ISSOCK(os.lstat(os.path.join(directory, name)).st_mode):
                out.append(name)
        except FileNotFoundError:
            continue
    return sorted(out)


def namespaces(prefix):
    """The network namespaces whose names start with prefix."""
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True,
                         timeout=30).stdout
    return sorted(line.split()[0] for line in out.splitlines() if line.startswith(prefix))


def interfaces(netns):
    """The interface names in netns."""
    p = subprocess.run(["ip", "-n", netns, "-json", "link", "show"], capture_output=True,
                       text=True, timeout=30)
    return sorted(link["ifname"] for link in json.loads(p.stdout or "[]")) if p.returncode == 0 else []


def smaps_rollup(pid):
    """/proc/PID/smaps_rollup in KiB by field (Rss, Pss, Anonymous, ...)."""
    totals = {}
    with open(f"/proc/{pid}/smaps_rollup") as f:
        for line in f:
            parts = line.split()
            if len(parts) == 3 and parts[2] == "kB":
                totals[parts[0].rstrip(":")] = int(parts[1])
    return totals
