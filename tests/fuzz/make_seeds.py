#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz targets (corpus/<target>/*).

The encodings mirror the input formats documented at the top of
vhost_messages_fuzzer.cpp and split_queue_fuzzer.cpp. Run it again after
changing either format; the files are committed.
"""

import os
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

# ---- virtio / vhost-user constants -------------------------------------------------
F_CSUM, F_GUEST_CSUM, F_MRG_RXBUF, F_ANY_LAYOUT = 1 << 0, 1 << 1, 1 << 15, 1 << 27
F_INDIRECT, F_EVENT_IDX, F_PROTOCOL, F_VERSION_1 = 1 << 28, 1 << 29, 1 << 30, 1 << 32
PF_MQ, PF_REPLY_ACK, PF_STATUS, PF_RESET_DEVICE = 1 << 0, 1 << 3, 1 << 16, 1 << 13
(GET_FEATURES, SET_FEATURES, SET_OWNER, RESET_OWNER, SET_MEM_TABLE) = 1, 2, 3, 4, 5
(SET_VRING_NUM, SET_VRING_ADDR, SET_VRING_BASE, GET_VRING_BASE) = 8, 9, 10, 11
(SET_VRING_KICK, SET_VRING_CALL, SET_VRING_ERR) = 12, 13, 14
(GET_PROTOCOL_FEATURES, SET_PROTOCOL_FEATURES, GET_QUEUE_NUM, SET_VRING_ENABLE) = 15, 16, 17, 18
NET_SET_MTU, RESET_DEVICE, SET_STATUS, GET_STATUS = 20, 34, 39, 40
D_NEXT, D_WRITE, D_INDIRECT = 1, 2, 4
UVA = 0x7F0000000000

u16 = lambda v: struct.pack("<H", v & 0xFFFF)
u32 = lambda v: struct.pack("<I", v & 0xFFFFFFFF)
u64 = lambda v: struct.pack("<Q", v & 0xFFFFFFFFFFFFFFFF)


def desc(addr, length, flags=0, nxt=0):
    return struct.pack("<QIHH", addr, length, flags, nxt)


def ethernet(dst, src, ethertype, payload):
    return bytes(dst) + bytes(src) + struct.pack(">H", ethertype) + payload


def csum(data):
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack(">%dH" % (len(data) // 2), data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return s


def udp_frame(dst, src, payload, partial=False):
    sip, dip = bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2])
    udp_len = 8 + len(payload)
    ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + udp_len, 1, 0, 64, 17, 0, sip, dip)
    ip = ip[:10] + struct.pack(">H", 0xFFFF - csum(ip)) + ip[12:]
    pseudo = sip + dip + struct.pack(">BBH", 0, 17, udp_len)
    if partial:
        c = csum(pseudo)  # NEEDS_CSUM: the pseudo-header sum, not inverted
    else:
        c = 0xFFFF - csum(pseudo + struct.pack(">HHHH", 1024, 9, udp_len, 0) + payload)
    udp = struct.pack(">HHHH", 1024, 9, udp_len, c) + payload
    return ethernet(dst, src, 0x0800, ip + udp)


def net_header(flags=0, csum_start=0, csum_offset=0):
    return struct.pack("<BBHHHHH", flags, 0, 0, 0, csum_start, csum_offset, 0)


def mac(n):
    return [2, 0, 0, 0, 0, n]


class Image:
    """Guest memory contents laid out by offset."""

    def __init__(self, size):
        self.b = bytearray(size)

    def put(self, off, data):
        self.b[off:off + len(data)] = data

    def bytes(self):
        return bytes(self.b.rstrip(b"\0")) or b"\0"


# ---- vhost_messages encoding ---------------------------------------------------------

class Messages:
    def __init__(self, setup=0):
        self.out = bytearray([setup])

    def msg(self, dev, request, payload=b"", need_reply=False, fds=(), flags_byte=None, lie=None):
        fl = 0x08 if need_reply else 0
        if flags_byte is not None:
            fl = flags_byte
        if lie is not None:
            fl |= 0x20
        self.out += bytes([dev << 7, request, fl])
        if len(payload) >= 255:
            self.out += bytes([255]) + u16(len(payload))
        else:
            self.out += bytes([len(payload)])
        self.out += payload
        if lie is not None:
            self.out += u16(lie)
        count = len(fds)
        spec = count if count < 8 else 0x80 | (count - 8)
        self.out += bytes([spec])
        for f in fds:
            if f[0] == "event":
                self.out += bytes([0])
            else:
                _, pages, content = f
                self.out += bytes([((pages - 1) << 1) | 1]) + u16(len(content)) + content
        return self

    def datapath(self, dev, off=0, data=b""):
        self.out += bytes([(dev << 7) | 3]) + u32(off) + bytes([len(data)]) + data
        return self


EV = ("event",)


def vring_state(i, n):
    return u32(i) + u32(n)


def vring_addr(i, desc_off, used_off, avail_off, base=UVA):
    return u32(i) + u32(0) + u64(base + desc_off) + u64(base + used_off) + u64(base + avail_off) + u64(0)


def mem_table(regions):
    p = u32(len(regions)) + u32(0)
    for gpa, size, uva, off in regions:
        p += u64(gpa) + u64(size) + u64(uva) + u64(off)
    return p


RX_RING = (0x0000, 0x0100, 0x0200)  # desc, avail, used
TX_RING = (0x1000, 0x1100, 0x1200)


def guest_image(me, peer, rx_buffer=0x800, indirect_tx=False, csum_frame=True):
    img = Image(0x10000)
    # Receive ring: four device-writable buffers.
    for k in range(4):
        img.put(RX_RING[0] + 16 * k, desc(0x2000 + k * 0x800, rx_buffer, D_WRITE))
        img.put(RX_RING[1] + 4 + 2 * k, u16(k))
    img.put(RX_RING[1] + 2, u16(4))
    # Transmit ring: a unicast frame, a broadcast, a NEEDS_CSUM UDP frame.
    frames = [
        net_header() + udp_frame(mac(peer), mac(me), b"unicast seed"),
        net_header() + ethernet([0xFF] * 6, mac(me), 0x88B5, b"\x5a" * 46),
    ]
    if csum_frame:
        frames.append(net_header(1, 34, 6) + udp_frame(mac(peer), mac(me), b"partial checksum", True))
    for k, f in enumerate(frames):
        at = 0x6000 + k * 0x200
        img.put(at, f)
        if indirect_tx:
            table = 0x7000 + k * 0x40
            img.put(table, desc(at, 12, D_NEXT, 1) + desc(at + 12, len(f) - 12))
            img.put(TX_RING[0] + 16 * k, desc(table, 32, D_INDIRECT))
        else:
            img.put(TX_RING[0] + 16 * k, desc(at, len(f)))
        img.put(TX_RING[1] + 4 + 2 * k, u16(k))
    img.put(TX_RING[1] + 2, u16(len(frames)))
    return img.bytes()


def qemu_setup(m, dev, features, image, pages=16, protocol=PF_REPLY_ACK | PF_STATUS, num=8, pairs=1):
    m.msg(dev, GET_FEATURES).msg(dev, GET_PROTOCOL_FEATURES)
    m.msg(dev, SET_PROTOCOL_FEATURES, u64(protocol))
    if pairs > 1:
        m.msg(dev, GET_QUEUE_NUM)
    m.msg(dev, SET_OWNER).msg(dev, GET_FEATURES)
    for r in range(2 * pairs):
        m.msg(dev, SET_VRING_CALL, u64(r), fds=[EV]).msg(dev, SET_VRING_ERR, u64(r), fds=[EV])
    for r in range(2 * pairs):
        m.msg(dev, SET_VRING_ENABLE, vring_state(r, 1))
    m.msg(dev, SET_FEATURES, u64(features))
    m.msg(dev, GET_STATUS).msg(dev, SET_STATUS, u64(8))
    m.msg(dev, SET_MEM_TABLE, mem_table([(0, pages * 4096, UVA, 0)]), need_reply=True,
          fds=[("mem", pages, image)])
    for r in range(2 * pairs):
        ring = RX_RING if r % 2 == 0 else TX_RING
        m.msg(dev, SET_VRING_NUM, vring_state(r, num)).msg(dev, SET_VRING_BASE, vring_state(r, 0))
        m.msg(dev, SET_VRING_ADDR, vring_addr(r, ring[0], ring[2], ring[1]))
        m.msg(dev, SET_VRING_KICK, u64(r), fds=[EV]).msg(dev, SET_VRING_CALL, u64(r), fds=[EV])
    m.msg(dev, GET_STATUS).msg(dev, SET_STATUS, u64(15))
    return m


LINUX = F_VERSION_1 | F_MRG_RXBUF | F_EVENT_IDX | F_INDIRECT | F_PROTOCOL | F_CSUM | F_GUEST_CSUM


def vhost_seeds():
    seeds = {}
    m = Messages()
    qemu_setup(m, 1, LINUX, guest_image(2, 1))
    qemu_setup(m, 0, LINUX, guest_image(1, 2))
    m.datapath(0).datapath(1)
    m.msg(0, SET_STATUS, u64(0)).msg(0, GET_VRING_BASE, vring_state(0, 0)).msg(0, GET_VRING_BASE, vring_state(1, 0))
    seeds["two_guests_traffic"] = m.out

    m = Messages(setup=0x04)  # device 0 without CSUM offered
    feats = F_VERSION_1 | F_INDIRECT | F_PROTOCOL | F_MRG_RXBUF
    qemu_setup(m, 1, feats | F_ANY_LAYOUT, guest_image(2, 1, rx_buffer=40, indirect_tx=True, csum_frame=False))
    qemu_setup(m, 0, feats, guest_image(1, 2, rx_buffer=40, indirect_tx=True, csum_frame=False))
    m.datapath(0).datapath(1).datapath(0, 0x1102, u16(7))
    seeds["indirect_mergeable_no_event_idx"] = m.out

    m = Messages(setup=0x01)  # device 0 with two queue pairs
    qemu_setup(m, 1, LINUX, guest_image(2, 1))
    qemu_setup(m, 0, LINUX | (1 << 22), guest_image(1, 2), protocol=PF_REPLY_ACK | PF_MQ, pairs=2)
    m.datapath(0).datapath(1)
    m.msg(0, SET_VRING_ENABLE, vring_state(2, 0)).datapath(0)
    seeds["two_queue_pairs"] = m.out

    m = Messages()
    m.msg(0, GET_PROTOCOL_FEATURES).msg(0, SET_PROTOCOL_FEATURES, u64(PF_REPLY_ACK))
    for req in (77, 0, 6, 7, 19, 22, 24, 36, 37, 200):
        m.msg(0, req, u64(1), need_reply=True)
    m.msg(0, NET_SET_MTU, u64(9000), need_reply=True).msg(0, NET_SET_MTU, u64(10), need_reply=True)
    seeds["unknown_and_unsupported"] = m.out

    m = Messages()
    m.msg(0, GET_PROTOCOL_FEATURES).msg(0, SET_PROTOCOL_FEATURES, u64(PF_REPLY_ACK))
    m.msg(0, SET_VRING_NUM, u32(0), need_reply=True)
    m.msg(0, SET_VRING_NUM, vring_state(0, 100), need_reply=True)
    m.msg(0, SET_VRING_NUM, vring_state(7, 256), need_reply=True)
    m.msg(0, SET_VRING_KICK, u64(1), need_reply=True, fds=[EV, EV])
    m.msg(0, SET_VRING_CALL, u64(0x101), need_reply=True, fds=[EV])
    m.msg(0, SET_VRING_ADDR, vring_addr(9, 0, 0, 0), need_reply=True)
    m.msg(0, SET_MEM_TABLE, mem_table([(0, 4096, UVA, 0)] * 9), need_reply=True, fds=[EV] * 8)
    m.msg(0, SET_MEM_TABLE, mem_table([(0, 0, UVA, 0)]), need_reply=True, fds=[("mem", 1, b"")])
    m.msg(0, GET_VRING_BASE, vring_state(3, 0), need_reply=True)
    seeds["refused_messages"] = m.out

    m = Messages()
    m.msg(0, GET_FEATURES, flags_byte=0xC0)          # protocol version 0
    m.msg(0, GET_FEATURES, lie=5000)                  # payload longer than any message
    m.msg(0, SET_VRING_KICK, u64(0), fds=[EV] * 9)    # too many fds
    m.msg(0, SET_OWNER, lie=16).msg(0, GET_FEATURES)  # size lies: framing lost
    seeds["framing_lost"] = m.out

    m = Messages()
    img = Image(0x10000)
    img.put(0x100, desc(0x400000 + 0x800, 64) )
    m.msg(0, GET_PROTOCOL_FEATURES).msg(0, SET_PROTOCOL_FEATURES, u64(PF_REPLY_ACK))
    m.msg(0, SET_OWNER).msg(0, SET_FEATURES, u64(F_VERSION_1))
    m.msg(0, SET_MEM_TABLE, mem_table([(0, 0x10000, UVA, 0), (0x400000, 0x10000, UVA + 0x100000, 0)]),
          need_reply=True, fds=[("mem", 16, img.bytes()), ("mem", 16, b"")])
    m.msg(0, SET_VRING_NUM, vring_state(1, 8)).msg(0, SET_VRING_BASE, vring_state(1, 0))
    m.msg(0, SET_VRING_ADDR, vring_addr(1, 0x100, 0x300, 0x200, base=UVA))
    m.msg(0, SET_VRING_KICK, u64(1), fds=[EV]).datapath(0, 0x202, u16(1))
    m.msg(0, RESET_OWNER).msg(0, RESET_DEVICE).msg(0, SET_OWNER)
    seeds["two_regions_and_resets"] = m.out
    return seeds


# ---- split_queue encoding --------------------------------------------------------------

GPA = 0x100000


def queue_input(size_code, last_avail, desc_off, avail_off, used_off, script, image):
    ops = b"".join(bytes([op, a]) + u16(b) for op, a, b in script)
    return bytes([size_code]) + u16(last_avail) + u16(desc_off) + u16(avail_off) + u16(used_off) + \
        bytes([len(script)]) + ops + image


POP_R, POP_W, ADD_USED, PUBLISH, ENABLE, DISABLE, UNPOP, POKE, AVAIL = range(9)


def queue_seeds():
    seeds = {}
    img = Image(0x4000)
    # size 8: desc 0x0, avail 0x200, used 0x400; buffers from 0x1000
    img.put(0x00, desc(GPA + 0x1000, 12, D_NEXT, 1) + desc(GPA + 0x1100, 60))
    img.put(0x20, desc(GPA + 0x800, 48, D_INDIRECT))
    img.put(0x800, desc(GPA + 0x1200, 12, D_NEXT, 1) + desc(GPA + 0x1300, 100, D_NEXT, 2) + desc(GPA + 0x1400, 8))
    img.put(0x30, desc(GPA + 0x1500, 2000, D_WRITE, 0))
    img.put(0x200, u16(0) + u16(3) + u16(0) + u16(2) + u16(3))
    script = [(POP_R, 0, 0), (ADD_USED, 0, 0), (POP_R, 0, 0), (ADD_USED, 0, 0), (PUBLISH, 0, 0),
              (POP_W, 0, 0), (ADD_USED, 0, 72), (PUBLISH, 0, 0), (ENABLE, 0, 0), (AVAIL, 0, 0),
              (POKE, 4, 0x202), (DISABLE, 0, 0), (POP_R, 0, 0), (UNPOP, 1, 0), (POP_R, 0, 0)]
    seeds["chains_both_directions"] = queue_input(3, 0, 0, 0x200, 0x400, script, img.bytes())
    seeds["chains_event_idx"] = queue_input(3 | 0x40, 0, 0, 0x200, 0x400, script, img.bytes())

    loop = Image(0x4000)
    loop.put(0x00, desc(GPA + 0x1000, 8, D_NEXT, 1) + desc(GPA + 0x1100, 8, D_NEXT, 0))
    loop.put(0x200, u16(0) + u16(1) + u16(0))
    seeds["descriptor_loop"] = queue_input(3, 0, 0, 0x200, 0x400, [(POP_R, 0, 0), (POP_W, 0, 0)], loop.bytes())

    nested = Image(0x4000)
    nested.put(0x00, desc(GPA + 0x800, 16, D_INDIRECT))
    nested.put(0x800, desc(GPA + 0x900, 16, D_INDIRECT))
    nested.put(0x200, u16(0) + u16(1) + u16(0))
    seeds["nested_indirect"] = queue_input(3, 0, 0, 0x200, 0x400, [(POP_R, 0, 0)], nested.bytes())

    wrap = Image(0x4000)
    for k in range(8):
        wrap.put(16 * k, desc(GPA + 0x1000 + 64 * k, 64, D_WRITE))
        wrap.put(0x200 + 4 + 2 * k, u16(k))
    wrap.put(0x202, u16(65534 + 8))
    seeds["index_wrap"] = queue_input(3, 65534, 0, 0x200, 0x400,
                                      [(POP_W, 0, 0), (ADD_USED, 0, 64)] * 8 + [(PUBLISH, 0, 0), (AVAIL, 0, 0)],
                                      wrap.bytes())
    seeds["avail_jump"] = queue_input(3, 0, 0, 0x200, 0x400, [(POKE, 9, 0x202), (AVAIL, 0, 0), (POP_R, 0, 0)],
                                      img.bytes())
    return seeds


def write(target, seeds):
    d = os.path.join(HERE, "corpus", target)
    os.makedirs(d, exist_ok=True)
    for name, data in seeds.items():
        with open(os.path.join(d, name), "wb") as f:
            f.write(data)
        print("%s/%s: %d bytes" % (target, name, len(data)))


if __name__ == "__main__":
    write("vhost_messages", vhost_seeds())
    write("split_queue", queue_seeds())
    sys.exit(0)
