/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The contract between bpf/xdp_steer.bpf.c and its loader
 * (lib/xsk/xdp_program.cpp): program and map names, key/value layouts and
 * counter indices. Plain C with fixed-width kernel types so both the BPF
 * target and C++ include the same definitions.
 */
#ifndef XDPVHOST_XDP_STEER_ABI_H
#define XDPVHOST_XDP_STEER_ABI_H

#include <linux/types.h>

/* Name of the XDP function; the kernel keeps the first 15 characters as the
 * program name and the loader finds stale copies of the program by it. */
#define XDP_STEER_PROG_NAME "xdpvhost_steer"

#define XDP_STEER_MAP_GUEST_MACS "guest_macs"
#define XDP_STEER_MAP_XSKS "xsks_map"
#define XDP_STEER_MAP_CONFIG "config"
#define XDP_STEER_MAP_STATS "stats"
#define XDP_STEER_MAP_WIRE_SOURCES "wire_sources"

#define XDP_STEER_MAX_GUEST_MACS 4096
#define XDP_STEER_MAX_QUEUES 256
/* Source MACs remembered from the wire (least recently seen evicted first). */
#define XDP_STEER_MAX_WIRE_SOURCES 16384
/* A remembered source's time is refreshed at most this often (ns). */
#define XDP_STEER_WIRE_SOURCE_REFRESH_NS 1000000000ULL
/* Of the frames steered to guests, one in this many per CPU has its source
 * remembered (every other frame's source is). A power of two. */
#define XDP_STEER_WIRE_SOURCE_SAMPLE 16

/* guest_macs key: the 6 address bytes, then 2 zero bytes (hash keys are
 * compared bytewise, so the padding must always be zero). */
struct xdp_steer_mac_key {
  __u8 addr[6];
  __u8 pad[2];
};

/* guest_macs value. No flag is defined yet; must be zero. */
struct xdp_steer_mac_value {
  __u32 flags;
  __u32 reserved;
};

/* wire_sources: key as guest_macs (the source address); value: when a frame
 * from it last arrived, bpf_ktime_get_coarse_ns() (CLOCK_MONOTONIC_COARSE),
 * refreshed at most every XDP_STEER_WIRE_SOURCE_REFRESH_NS. The daemon never
 * lets a guest learn a MAC seen here recently: it belongs to someone on the
 * LAN (its gateway, say). */

/* config map: one entry at index 0. */
struct xdp_steer_config {
  /* Frames to a guest MAC longer than this (Ethernet header included,
   * FCS excluded) are dropped and counted. 0 = no limit. */
  __u32 max_frame_len;
  __u32 flags;
};

/* config.flags: pass every frame to the kernel (nothing is redirected). */
#define XDP_STEER_CFG_BYPASS (1U << 0)

/* stats: a per-CPU array with one __u64 per counter, indexed by these. */
enum xdp_steer_stat {
  XDP_STEER_STAT_REDIRECTED = 0,   /* guest unicast handed to xsks_map */
  XDP_STEER_STAT_REDIRECT_FAILED,  /* guest unicast, no socket on this queue: passed */
  XDP_STEER_STAT_PASSED_HOST,      /* unicast not for a guest: XDP_PASS */
  XDP_STEER_STAT_PASSED_FLOOD,     /* broadcast/multicast: XDP_PASS (flood socket copies) */
  XDP_STEER_STAT_OVERSIZE_DROPPED, /* guest unicast longer than max_frame_len: XDP_DROP */
  XDP_STEER_STAT_MALFORMED,        /* shorter than an Ethernet header: XDP_PASS */
  XDP_STEER_STAT_BYPASSED,         /* XDP_STEER_CFG_BYPASS set: XDP_PASS */
  XDP_STEER_STAT_COUNT
};

#endif /* XDPVHOST_XDP_STEER_ABI_H */
