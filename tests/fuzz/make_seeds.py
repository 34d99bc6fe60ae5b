#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz targets (corpus/<target>/*) and the
libFuzzer dictionaries (*.dict).

The encodings mirror the input formats documented at the top of each
<target>_fuzzer.cpp. Run it again after changing a format; the files are
committed. The control_protocol and config_loader seeds and json.dict are
made from proto/ (the method examples, the example configs, the schemas'
property names and enums), so they follow the protocol as it changes.
"""

import glob
import json
import os
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
PROTO = os.path.join(HERE, "..", "..", "proto")

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

    def msg(self, dev, request, payload=b"", need_reply=False, fds=(), flags_byte=None, lie=None,
            as_sent=False):
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
        if as_sent:
            spec |= 0x40  # the memory table as it is, not fitted to its memfds
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

    # A region twice as large as its memfd, sent as it is (once SIGBUS in the
    # datapath; refused now), then the rings in the part the fd does not back
    # and a kick: device 1 keeps switching meanwhile.
    m = Messages()
    qemu_setup(m, 1, LINUX, guest_image(2, 1))
    img = Image(0x10000)
    m.msg(0, GET_PROTOCOL_FEATURES).msg(0, SET_PROTOCOL_FEATURES, u64(PF_REPLY_ACK))
    m.msg(0, SET_OWNER).msg(0, SET_FEATURES, u64(F_VERSION_1))
    m.msg(0, SET_MEM_TABLE, mem_table([(0, 0x20000, UVA, 0)]), need_reply=True,
          fds=[("mem", 16, img.bytes())], as_sent=True)
    m.msg(0, SET_VRING_NUM, vring_state(1, 8)).msg(0, SET_VRING_BASE, vring_state(1, 0))
    m.msg(0, SET_VRING_ADDR, vring_addr(1, 0x18000, 0x19000, 0x1a000, base=UVA))
    m.msg(0, SET_VRING_KICK, u64(1), fds=[EV]).datapath(0).datapath(1)
    seeds["region_beyond_its_memfd"] = m.out
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

# ---- offload: virtio-net offload headers and frames (offload_fuzzer.cpp) -----------
def tcp_gso_frame(payload_len, ipv6=False, vlan=False, tcp_options=b"", ip_options=b"",
                  flags=0x18, udp=False):
    """A GSO frame as a Linux guest hands it over: the L4 checksum field holds
    the pseudo-header sum of the whole packet (NEEDS_CSUM)."""
    payload = bytes(i % 251 for i in range(payload_len))
    if udp:
        l4 = struct.pack(">HHHH", 4000, 5000, 8 + payload_len, 0)
        proto = 17
    else:
        doff = (20 + len(tcp_options)) // 4
        l4 = struct.pack(">HHIIBBHHH", 40000, 5201, 1000, 777, doff << 4, flags, 512, 0, 0)
        l4 += tcp_options
        proto = 6
    l4_len = len(l4) + payload_len
    if ipv6:
        sip, dip = bytes(range(0x20, 0x30)), bytes(range(0x40, 0x50))
        ip = struct.pack(">IHBB", 0x60012345, l4_len, proto, 64) + sip + dip
        pseudo = sip + dip + struct.pack(">IxxxB", l4_len, proto)
        ethertype = 0x86DD
    else:
        sip, dip = bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2])
        ihl = (20 + len(ip_options)) // 4
        ip = struct.pack(">BBHHHBBH4s4s", 0x40 | ihl, 0, ihl * 4 + l4_len, 0x1234, 0x4000, 64, proto, 0,
                         sip, dip) + ip_options
        ip = ip[:10] + struct.pack(">H", 0xFFFF - csum(ip)) + ip[12:]
        pseudo = sip + dip + struct.pack(">BBH", 0, proto, l4_len)
        ethertype = 0x0800
    field = 6 if udp else 16
    l4 = l4[:field] + struct.pack(">H", csum(pseudo)) + l4[field + 2:]
    l2 = bytes(mac(2)) + bytes(mac(1))
    if vlan:
        l2 += struct.pack(">HH", 0x8100, 100)
    frame = l2 + struct.pack(">H", ethertype) + ip + l4 + payload
    return frame, len(l2) + 2 + len(ip)


def offload_input(frame, mode=0, mtu=1500, max_segments=0, buffer=2048, cuts=(0, 0), flags=1,
                  gso_type=1, hdr_len=0, gso_size=1448, csum_start=0, csum_offset=16):
    head = struct.pack("<BHBHBB", mode, mtu, max_segments, buffer, cuts[0], cuts[1])
    return head + struct.pack("<BBHHHH", flags, gso_type, hdr_len, gso_size, csum_start,
                              csum_offset) + frame


def offload_seeds():
    ts = bytes([1, 1, 8, 10, 0, 0, 3, 232, 0, 0, 7, 208])
    seeds = {}
    f, l4 = tcp_gso_frame(20000, tcp_options=ts)
    seeds["tso4_timestamps"] = offload_input(f, hdr_len=l4 + 32 + 10, csum_start=l4)
    seeds["tso4_partial_scattered"] = offload_input(f, mode=1, cuts=(7, 250), csum_start=l4)
    f, l4 = tcp_gso_frame(65535 - 20 - 32, tcp_options=ts)
    seeds["tso4_64k"] = offload_input(f, gso_size=1448, csum_start=l4, cuts=(250, 250))
    f, l4 = tcp_gso_frame(30000, ipv6=True, vlan=True, tcp_options=ts)
    seeds["tso6_vlan"] = offload_input(f, gso_type=4, gso_size=1420, csum_start=l4, cuts=(1, 5))
    f, l4 = tcp_gso_frame(5000, flags=0x99)
    seeds["tso4_cwr_fin_ecn"] = offload_input(f, mode=2 | 8, gso_type=0x81, csum_start=l4)
    f, l4 = tcp_gso_frame(4000, ip_options=bytes([0x94, 4, 0, 0]))
    seeds["tso4_ip_options"] = offload_input(f, csum_start=l4)
    f, l4 = tcp_gso_frame(3000, udp=True, ipv6=True)
    seeds["uso6"] = offload_input(f, gso_type=5, gso_size=1200, csum_start=l4, csum_offset=6)
    f, l4 = tcp_gso_frame(9000)
    seeds["jumbo_mtu"] = offload_input(f, mtu=9000, buffer=9216, gso_size=8960, csum_start=l4)
    f, l4 = tcp_gso_frame(600, udp=True)
    seeds["csum_only_udp"] = offload_input(f, gso_type=0, gso_size=0, csum_start=l4, csum_offset=6)
    f, l4 = tcp_gso_frame(1448, flags=0x10)
    seeds["gro_raw_segment_verified"] = offload_input(f, mode=16, flags=0, gso_type=0)
    # Hostile headers.
    f, l4 = tcp_gso_frame(8000)
    seeds["gso_size_zero"] = offload_input(f, gso_size=0, csum_start=l4)
    seeds["gso_size_above_mtu"] = offload_input(f, gso_size=1600, csum_start=l4)
    seeds["hdr_len_beyond_frame"] = offload_input(f, hdr_len=len(f) + 100, csum_start=l4)
    seeds["csum_start_in_ethernet"] = offload_input(f, csum_start=6)
    seeds["csum_start_in_ip"] = offload_input(f, csum_start=24)
    seeds["csum_offset_udp_on_tcp"] = offload_input(f, csum_start=l4, csum_offset=6)
    seeds["ufo"] = offload_input(f, gso_type=3, csum_start=l4)
    seeds["tcp_with_uso"] = offload_input(f, gso_type=5, csum_start=l4)
    seeds["tso6_on_ipv4"] = offload_input(f, gso_type=4, csum_start=l4)
    seeds["too_many_segments"] = offload_input(f, gso_size=40, max_segments=50, csum_start=l4)
    truncated = f[:l4 + 12]
    truncated = truncated[:16] + struct.pack(">H", 20 + 12) + truncated[18:]
    seeds["truncated_tcp_header"] = offload_input(truncated, csum_start=l4)
    return seeds


# ---- vhost_connection encoding ----------------------------------------------------------

# fd kinds (vhost_connection_fuzzer.cpp, make_fd)
K_EVENT, K_MEMFD, K_SEALED, K_PIPE_R, K_PIPE_W, K_SOCKET, K_NULL, K_FILE, K_DIR, K_OPATH, K_EPOLL, K_TIMER = \
    range(12)
K_BLOCKING = 0x10  # on K_EVENT


def pages(kind, n):
    return kind | ((n - 1) << 4)


class Framing:
    def __init__(self, setup=0):
        self.out = bytearray([setup])

    def msg(self, request, payload=b"", need_reply=False, flags_byte=None, lie=None):
        fl = 0x08 if need_reply else 0
        if flags_byte is not None:
            fl = flags_byte
        if lie is not None:
            fl |= 0x20
        self.out += bytes([0, request, fl])
        self.out += (bytes([255]) + u16(len(payload))) if len(payload) >= 255 else bytes([len(payload)])
        self.out += payload
        if lie is not None:
            self.out += u16(lie)
        return self

    def raw(self, data):
        self.out += bytes([1, len(data)]) + data
        return self

    def fds(self, kind, count=1):
        self.out += bytes([2 | ((count - 1) << 5), kind])
        return self

    def send(self, n=0):
        self.out += bytes([3, n])
        return self

    def pump(self):
        self.out += bytes([4])
        return self

    def hang_up(self):
        self.out += bytes([5])
        return self

    def one(self, request, payload=b"", fds=(), need_reply=False):
        """A message sent as one piece with its fds, then handled."""
        self.msg(request, payload, need_reply)
        for kind in fds:
            self.fds(kind)
        return self.send().pump()


def framing_handshake(f, each=True, kick=K_EVENT, memory=pages(K_SEALED, 16)):
    """QEMU's order; each message sent on its own (each=True) or only appended."""
    steps = [
        (GET_FEATURES, b"", ()), (GET_PROTOCOL_FEATURES, b"", ()),
        (SET_PROTOCOL_FEATURES, u64(PF_REPLY_ACK | PF_STATUS), ()), (SET_OWNER, b"", ()),
        (SET_VRING_CALL, u64(0), (K_EVENT,)), (SET_VRING_ERR, u64(0), (K_EVENT,)),
        (SET_VRING_CALL, u64(1), (K_EVENT,)), (SET_VRING_ENABLE, vring_state(0, 1), ()),
        (SET_VRING_ENABLE, vring_state(1, 1), ()), (SET_FEATURES, u64(LINUX), ()),
        (SET_MEM_TABLE, mem_table([(0, 16 * 4096, UVA, 0)]), (memory,)),
    ]
    for r, ring in ((0, RX_RING), (1, TX_RING)):
        steps += [(SET_VRING_NUM, vring_state(r, 8), ()), (SET_VRING_BASE, vring_state(r, 0), ()),
                  (SET_VRING_ADDR, vring_addr(r, ring[0], ring[2], ring[1]), ()),
                  (SET_VRING_KICK, u64(r), (kick,)), (SET_VRING_CALL, u64(r), (K_EVENT,))]
    steps += [(SET_STATUS, u64(15), ()), (GET_VRING_BASE, vring_state(0, 0), ())]
    for request, payload, fds in steps:
        need = request in (SET_MEM_TABLE, SET_VRING_KICK)
        if each:
            f.one(request, payload, fds, need_reply=need)
        else:
            f.msg(request, payload, need)
    return steps


def framing_seeds():
    seeds = {}
    f = Framing()
    framing_handshake(f)
    seeds["handshake_piece_per_message"] = f.out

    # The same stream one byte at a time; each message's fds ride on its first byte.
    f = Framing(setup=1)
    for request, payload, fds in framing_handshake(Framing()):
        f.msg(request, payload, request in (SET_MEM_TABLE, SET_VRING_KICK))
        for kind in fds:
            f.fds(kind)
        for _ in range(12 + len(payload)):
            f.send(1)
        f.pump()
    seeds["handshake_byte_by_byte"] = f.out

    # fds on a piece that starts in the middle of the payload, and on one that
    # starts in the message before (they belong to that one: SET_OWNER refuses them).
    f = Framing()
    f.one(GET_PROTOCOL_FEATURES).one(SET_PROTOCOL_FEATURES, u64(PF_REPLY_ACK))
    f.msg(SET_VRING_CALL, u64(0), need_reply=True).send(15).fds(K_EVENT).send().pump()
    f.msg(SET_OWNER).msg(SET_VRING_CALL, u64(1), need_reply=True).send(6).fds(K_EVENT).send().pump()
    seeds["fds_mid_message_and_across"] = f.out

    # Too many fds: nine on one piece; 40 on one piece (MSG_CTRUNC); eight
    # spread over one-byte pieces and a ninth.
    f = Framing()
    f.msg(SET_VRING_KICK, u64(0)).fds(K_EVENT, 8).fds(K_EVENT).send().pump()
    f.msg(SET_VRING_KICK, u64(0))
    for _ in range(5):
        f.fds(K_NULL, 8)
    f.send().pump()
    f.msg(SET_MEM_TABLE, mem_table([(0, 4096, UVA, 0)] * 8))
    for _ in range(9):
        f.fds(pages(K_MEMFD, 1)).send(1)
    f.pump().send().pump()
    seeds["too_many_fds"] = f.out

    # Every wrong kind as kick, call and err; every kind as memory.
    f = Framing()
    f.one(GET_PROTOCOL_FEATURES).one(SET_PROTOCOL_FEATURES, u64(PF_REPLY_ACK)).one(SET_OWNER)
    f.one(SET_FEATURES, u64(LINUX))
    for k, kind in enumerate([K_PIPE_W, K_PIPE_R, K_SOCKET, K_NULL, K_EVENT | K_BLOCKING, K_TIMER, K_EPOLL,
                              K_FILE, K_DIR, K_OPATH, pages(K_MEMFD, 1)]):
        f.one((SET_VRING_KICK, SET_VRING_CALL, SET_VRING_ERR)[k % 3], u64(k % 2), (kind,), need_reply=True)
    for kind in [K_PIPE_R, K_DIR, K_OPATH, K_NULL, K_FILE, pages(K_MEMFD, 16), K_EVENT, K_SOCKET, K_TIMER]:
        f.one(SET_MEM_TABLE, mem_table([(0, 16 * 4096, UVA, 0)]), (kind,), need_reply=True)
    seeds["wrong_fd_kinds"] = f.out

    # Blocking eventfds as kick fds, and a memfd that can shrink; two queue pairs.
    f = Framing(setup=1)
    framing_handshake(f, kick=K_EVENT | K_BLOCKING, memory=pages(K_MEMFD, 16))
    seeds["blocking_eventfd_unsealed_memory"] = f.out

    # Framing lost: version 0, a payload longer than any message, a size that
    # lies (the next header is read from the middle of a payload), garbage,
    # and a torn header when the frontend hangs up.
    f = Framing()
    f.msg(GET_FEATURES, flags_byte=0xC0).send().pump()
    f.one(GET_FEATURES).msg(GET_FEATURES, lie=5000).send().pump()
    f.msg(SET_OWNER, lie=16).msg(GET_FEATURES).msg(GET_FEATURES).send().pump()
    f.raw(b"\xff" * 40).send().pump()
    f.one(GET_FEATURES).msg(GET_QUEUE_NUM).send(7).pump().hang_up()
    f.one(GET_FEATURES).msg(SET_FEATURES, u64(LINUX)).send(15).hang_up()
    seeds["framing_lost"] = f.out

    # Everything appended, then sent in one piece without fds: the daemon
    # reads message after message out of one buffer (and refuses those that
    # need an fd).
    f = Framing()
    framing_handshake(f, each=False)
    f.send().pump()
    seeds["handshake_one_piece_no_fds"] = f.out
    return seeds


# ---- http_request encoding --------------------------------------------------------------

def http(head, limit=0x80, chunking=0):
    return bytes([limit, chunking]) + head


def http_seeds():
    crlf = b"\r\n"
    get = b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1:9477\r\nAccept: */*\r\n\r\n"
    return {
        "get_metrics": http(get),
        "get_metrics_in_pieces": http(get, chunking=7),
        "healthz_http10_keep_alive": http(b"GET /healthz HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"),
        "head_absolute_form_query": http(b"HEAD http://node:9477/metrics?x=1 HTTP/1.1\r\nHost: node\r\n\r\n"),
        "pipelined_then_close": http(get + b"GET /healthz HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n" + get,
                                     chunking=3),
        "leading_empty_lines": http(crlf * 3 + get, chunking=1),
        "folded_field": http(b"GET / HTTP/1.1\r\nHost: a\r\nX-A: one\r\n two\r\n\r\n"),
        "no_host_400": http(b"GET / HTTP/1.1\r\n\r\n"),
        "two_hosts_400": http(b"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n"),
        "bare_lf_400": http(b"GET / HTTP/1.1\nHost: a\n\n"),
        "body_413": http(b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello"),
        "chunked_501": http(b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"),
        "http2_505": http(b"GET / HTTP/2.0\r\nHost: a\r\n\r\n", chunking=5),
        "head_too_large_431": http(b"GET / HTTP/1.1\r\nHost: a\r\nX-Long: " + b"x" * 100 + b"\r\n\r\n", limit=4),
        "empty_lines_over_limit_431": http(crlf * 40, limit=2),
        # Both found by this target; see the OPEN BUG note in http_request_fuzzer.cpp.
        # (version_cr_split, malformed_past_limit: committed as found, not written here)
    }


HTTP_DICT = ["GET", "HEAD", "POST", "OPTIONS", " HTTP/1.1", " HTTP/1.0", " HTTP/2.0", "\r\n", "\r\n\r\n",
             "Host: ", "Connection: ", "close", "keep-alive", "Content-Length: ", "Transfer-Encoding: ",
             "chunked", "http://", "/metrics", "/healthz", "?", "#", "\t", " "]


# ---- config_loader and control_protocol: from proto/ ------------------------------------

def load(path):
    with open(path) as f:
        return json.load(f)


def method_examples():
    """(method, params) for every example in proto/methods/, in file order."""
    out = []
    for path in sorted(glob.glob(os.path.join(PROTO, "methods", "*.json"))):
        doc = load(path)
        for example in doc.get("examples", []):
            out.append((doc["title"], example.get("params", {})))
    return out


def compact(value):
    return json.dumps(value, separators=(",", ":")).encode()


def config_seeds():
    seeds = {}
    for path in sorted(glob.glob(os.path.join(PROTO, "examples", "*.json"))):
        with open(path, "rb") as f:
            seeds[os.path.basename(path)[:-5]] = b"\0" + f.read()
    for i, (method, params) in enumerate(method_examples()):
        if method == "port.add":
            seeds["port_add_example_%d" % i] = b"\1" + compact(params)
        if method == "uplink.add":
            seeds["uplink_add_example_%d" % i] = b"\2" + compact(params)
    port = {"name": "vm1", "socket": "/run/x/vm1.sock", "mac": "52:54:00:00:00:01"}
    bad = {
        "not_json": b"\0{\"ports\": [",
        "nested_too_deep": b"\0" + b"[" * 70 + b"]" * 70,
        "unknown_field": b"\0" + compact({"ports": [dict(port, sokcet="/x")]}),
        "duplicate_names": b"\0" + compact({"ports": [port, dict(port, mac="52:54:00:00:00:02",
                                                                  socket="/run/x/b.sock")]}),
        "multicast_mac": b"\1" + compact(dict(port, mac="01:00:5e:00:00:01")),
        "socket_too_long": b"\1" + compact(dict(port, socket="/" + "s" * 120)),
        "socket_with_nul": b"\1" + compact(dict(port, socket="/run/x\u0000.sock")),
        "unknown_uplink": b"\0" + compact({"ports": [dict(port, uplink="up9")]}),
        "thread_out_of_range": b"\0" + compact({"ports": [dict(port, thread=3)], "threads": {"count": 2}}),
        "mtu_over_frame": b"\0" + compact({"uplinks": [{"name": "up0", "interface": "eth1", "queues": [0]}],
                                           "ports": [dict(port, uplink="up0", mtu=9000)]}),
        "uplink_queue_twice": b"\0" + compact({"uplinks": [{"name": "up0", "interface": "eth1", "queues": [0]},
                                                           {"name": "up1", "interface": "eth1", "queues": [0]}]}),
        "uplink_bad_interface": b"\2" + compact({"name": "up0", "interface": "eth 1", "queues": [0]}),
        "listen_bad_port": b"\0" + compact({"metrics": {"listen": "127.0.0.1:99999"}}),
    }
    seeds.update(bad)
    return seeds


def rpc(method, params=None, id_=None, extra=None):
    r = {"jsonrpc": "2.0", "method": method}
    if id_ is not None:
        r["id"] = id_
    if params is not None:
        r["params"] = params
    if extra:
        r.update(extra)
    return compact(r) + b"\n"


CONTROL_MAX_LEN = 1024  # -max_len of control_protocol's and control_api's runs (CMakeLists.txt)


def control(lines, limit=7, mode=0):
    seed = bytes([limit, mode]) + b"".join(lines)
    assert len(seed) <= CONTROL_MAX_LEN, len(seed)
    return seed


def control_seeds():
    seeds = {}
    examples = method_examples()
    # Every documented request, in an order in which the ones naming ports
    # and uplinks find them: add first, then everything else, remove last.
    order = {"uplink.add": 0, "port.add": 1, "port.remove": 3, "uplink.remove": 4}
    ordered = sorted(examples, key=lambda e: order.get(e[0], 2))
    # (At most CONTROL_MAX_LEN bytes each, the -max_len of the runs: a few
    # requests per session, many sessions per second.)
    setup = [rpc("uplink.add", {"name": "up0", "interface": "eth1", "queues": [0]}, 0),
             rpc("port.add", {"name": "vm1", "socket": "/run/x/vm1.sock", "mac": "52:54:00:00:00:01",
                              "uplink": "up0"}, 100)]
    lines = [rpc(m, p, i + 1) for i, (m, p) in enumerate(ordered)]
    part, parts = [], []
    for line in lines:
        if sum(map(len, setup + part + [line])) + 2 > CONTROL_MAX_LEN:
            parts.append(part)
            part = []
        part.append(line)
    parts.append(part)
    for k, part in enumerate(parts):
        seeds["method_examples_%d" % k] = control(setup + part, mode=9 if k % 2 else 0)

    port = {"name": "vm1", "socket": "/run/x/vm1.sock", "mac": "52:54:00:00:00:01"}
    seeds["port_conflicts"] = control([
        rpc("uplink.add", {"name": "up0", "interface": "eth1", "queues": [0, 1]}, 1),
        rpc("port.add", dict(port, uplink="up0", mode="client"), 2),
        rpc("port.add", dict(port, name="vm2", mac="52:54:00:00:00:02", socket="/run/x/vm2.sock"), 3),
        rpc("port.add", dict(port, name="vm3", mac="52:54:00:00:00:03"), 4),         # socket in use
        rpc("port.add", dict(port, socket="/run/x/other.sock", mac="52:54:00:00:00:09"), 5),  # name in use
        rpc("port.add", dict(port, name="vm4", socket="/run/x/vm4.sock"), 6),        # MAC in use
        rpc("port.add", dict(port, name="vm5", mac="52:54:00:00:00:05", socket="/run/x/vm5.sock",
                             mac_policy="learn"), 7),
    ], mode=5)
    seeds["port_lifecycle"] = control([
        rpc("uplink.add", {"name": "up0", "interface": "eth1", "queues": [0, 1]}, 1),
        rpc("port.add", dict(port, uplink="up0", mode="client"), 2),
        rpc("tunables.set", {"port": "vm1", "signal_batch": 8}, 8),
        rpc("tunables.set", {"uplink": "up0", "napi_busy_poll": True}, 9),
        rpc("tunables.set", {"busy_poll_us": 10}, 10),
        rpc("stats.reset", {}, 11),
        rpc("stats.get", {"port": "vm1"}, 12),
        rpc("uplink.remove", {"name": "up0"}, 13),                                   # in use
        rpc("port.remove", {"name": "vm1"}, 14),
        rpc("port.get", {"name": "vm1"}, 15),                                         # not found
        rpc("uplink.remove", {"name": "up0"}, 16),
    ], mode=5)
    seeds["envelope_errors"] = control([
        b"not json\n",
        b"[" + rpc("version", {}, 1)[:-1] + b"]\n",                  # a batch
        b"42\n",
        compact({"id": 1, "method": "version"}) + b"\n",              # no jsonrpc
        compact({"jsonrpc": "1.0", "id": 2, "method": "version"}) + b"\n",
        compact({"jsonrpc": "2.0", "id": 1.5, "method": "version"}) + b"\n",
        compact({"jsonrpc": "2.0", "id": [3], "method": "version"}) + b"\n",
        compact({"jsonrpc": "2.0", "id": 4}) + b"\n",                 # no method
        rpc("version", {}, 5, {"extra": 1}),                          # unknown member
        rpc("version", [1, 2], 6),                                    # params not an object
        rpc("no.such.method", {}, 7),
        rpc("port.add", {"name": "vm1"}, 8),                          # invalid params
        rpc("port.get", {"name": 5}, "a string id"),
        rpc("version", {}, None),                                     # notification: no reply
        rpc("no.such.method", {}, None),                              # notification: no reply either
    ], mode=3)
    seeds["envelope_errors_2"] = control([
        compact({"method": "version"}) + b"\n",                       # not a request: a reply
        rpc("version", {}, None, {"id": None}),                       # id null: a reply
        b"\n\r\n  \n",                                                # empty lines, a blank one
        rpc("status", {}, 9)[:-1] + b"\r\n",                          # CR LF
        b"[" * 70 + b"]" * 70 + b"\n",                                # nested too deeply
        b"{\"jsonrpc\":\"2.0\",\"id\":10,\"method\":\"version\",\"params\":{\"\xff\":1}}\n",
        rpc("version", {}, 11)[:-1],                                  # no newline: dropped at EOF
    ], mode=3)
    seeds["too_large_line"] = control([rpc("version", {}, 1), rpc("port.add", dict(port, name="x" * 10), 2),
                                       rpc("version", {}, 3)], limit=0)
    seeds["too_large_without_newline"] = control([rpc("version", {}, 1), b"{" + b" " * 100], limit=0, mode=2)
    seeds["two_clients"] = control([rpc("port.add", port, 1), rpc("port.add", port, 2), rpc("status", {}, 3),
                                    rpc("port.remove", {"name": "vm1"}, 4), b"{\"jsonrpc\":", b"\n"],
                                   mode=0x40 | 4)
    return seeds


def json_dict():
    words = set()

    def walk(node):
        if isinstance(node, dict):
            for key, value in node.items():
                if key in ("properties", "$defs"):
                    words.update(value.keys())
                if key == "enum":
                    words.update(v for v in value if isinstance(v, str))
                walk(value)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    for path in glob.glob(os.path.join(PROTO, "*.json")) + glob.glob(os.path.join(PROTO, "methods", "*.json")):
        doc = load(path)
        walk(doc)
        if "title" in doc and "/methods/" in path:
            words.add(doc["title"])
    tokens = ['"%s"' % w for w in sorted(words)]
    tokens += ['"jsonrpc"', '"2.0"', '"id"', '"method"', '"params"', "{", "}", "[", "]", ":", ",", "true",
               "false", "null", "\n", "52:54:00:00:00:01", "/run/x/a.sock", "-1", "4294967296", "1e3"]
    return tokens


def write_dict(name, tokens):
    with open(os.path.join(HERE, name), "w") as f:
        f.write("# libFuzzer dictionary, written by make_seeds.py\n")
        for t in tokens:
            escaped = "".join("\\x%02x" % ord(c) if c in '"\\' or not c.isprintable() else c for c in t)
            f.write('"%s"\n' % escaped)
    print("%s: %d tokens" % (name, len(tokens)))


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
    write("vhost_connection", framing_seeds())
    write("http_request", http_seeds())
    write("config_loader", config_seeds())
    write("control_protocol", control_seeds())
    write("control_api", control_seeds())
    write_dict("http.dict", HTTP_DICT)
    write_dict("json.dict", json_dict())
    write("offload", offload_seeds())
    sys.exit(0)
