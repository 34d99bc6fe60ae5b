"""Is the destination's guest memory the source's, page for page, at the
switch-over? Both QEMUs keep guest RAM in a memfd (memory-backend-memfd,
share=on: vhost-user needs it), so both are read from outside, through
/proc/PID/fd, while both VMs are paused: the source after the migration
completed (postmigrate), the destination before it runs (started with -S).

Nothing writes either memory then: the source's vCPUs are stopped and its
vhost-user rings were stopped by GET_VRING_BASE; the destination's rings
start only at `cont`. So every page that differs was lost on the way: a
write the source made after the page was sent that no dirty log marked
(the backend's log for its own writes, QEMU's for the guest's).

Each differing page is described with what it holds when QEMU can tell:
a vring's descriptor table, avail ring or used ring (x-query-virtio-queue-
status on the source)."""

from __future__ import annotations

import os

PAGE = 4096
CHUNK = 1 << 20


def guest_memfd(pid: int) -> str:
    """/proc/PID/fd/N of QEMU's guest RAM memfd (the only memfd named mem)."""
    fd_dir = f"/proc/{pid}/fd"
    for fd in sorted(os.listdir(fd_dir), key=int):
        try:
            target = os.readlink(os.path.join(fd_dir, fd))
        except OSError:
            continue
        if target.startswith("/memfd:mem"):
            return os.path.join(fd_dir, fd)
    raise RuntimeError(f"QEMU {pid} holds no memfd named mem (memory-backend-memfd id=mem)")


def differing_pages(src_path: str, dst_path: str) -> tuple[int, list[tuple[int, bytes, bytes]]]:
    """(bytes compared, [(offset, source page, destination page)]) for every page that differs."""
    pages = []
    compared = 0
    with open(src_path, "rb") as a, open(dst_path, "rb") as b:
        while True:
            x = a.read(CHUNK)
            y = b.read(CHUNK)
            if not x and not y:
                break
            if len(x) != len(y):
                raise RuntimeError(f"guest memories differ in size near {compared:#x}: "
                                   f"{len(x)} against {len(y)} bytes read")
            if x != y:
                for off in range(0, len(x), PAGE):
                    if x[off:off + PAGE] != y[off:off + PAGE]:
                        pages.append((compared + off, x[off:off + PAGE], y[off:off + PAGE]))
            compared += len(x)
    return compared, pages


def vring_areas(guest) -> list[tuple[int, int, str]]:
    """(guest physical start, end, name) of each vring area of the guest's
    virtio devices, from QEMU's own view (x-query-virtio-queue-status)."""
    areas = []
    devices = guest.qmp("x-query-virtio").get("return", [])
    for dev in devices:
        path = dev.get("path", "")
        for q in range(2):
            st = guest.qmp("x-query-virtio-queue-status", path=path, queue=q).get("return")
            if not st:
                continue
            num = int(st.get("vring-num", 0))
            name = f"{dev.get('name', '?')} vq{q}"
            for part, addr_key, size in (("desc", "vring-desc", 16 * num),
                                         ("avail", "vring-avail", 6 + 2 * num),
                                         ("used", "vring-used", 6 + 8 * num)):
                start = int(st.get(addr_key, 0))
                if start:
                    areas.append((start, start + size, f"{name} {part}"))
    return areas


def describe(offset: int, src: bytes, dst: bytes, areas) -> str:
    diffs = [i for i in range(len(src)) if src[i] != dst[i]]
    first, last = diffs[0], diffs[-1]
    holds = [name for start, end, name in areas if start < offset + PAGE and end > offset]
    lo = first & ~15
    return (f"page {offset:#x}: {len(diffs)} bytes differ at +{first:#x}..+{last:#x}"
            f"{' (' + ', '.join(holds) + ')' if holds else ''}; at +{lo:#x} source "
            f"{src[lo:lo + 32].hex()} destination {dst[lo:lo + 32].hex()}")


def compare(src, dst, limit: int = 12) -> tuple[bool, str, list[str]]:
    """(same, summary, details) for two paused guests; details name the
    source's vring areas and describe up to `limit` differing pages."""
    compared, pages = differing_pages(guest_memfd(src.proc.pid), guest_memfd(dst.proc.pid))
    areas = vring_areas(src)
    details = ["vring areas: " + ", ".join(f"{n} {s:#x}-{e:#x}" for s, e, n in areas)]
    details += [describe(off, a, b, areas) for off, a, b in pages[:limit]]
    if not pages:
        return True, f"{compared >> 20} MiB compared, every page the same", details
    return False, f"{len(pages)} of {compared // PAGE} pages differ", details
