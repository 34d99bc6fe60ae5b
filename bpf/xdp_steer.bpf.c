// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * xdpvhost steering program.
 *
 *   dst MAC is a guest on this uplink  -> AF_XDP socket of the receiving queue
 *                                         (XDP_DROP if longer than max_frame_len)
 *   broadcast / multicast              -> XDP_PASS; the daemon's flood socket
 *                                         (AF_PACKET) copies them to the guests
 *   anything else                      -> XDP_PASS (the node's own traffic)
 *
 * Every frame's source MAC is remembered in wire_sources (those steered to
 * guests one in XDP_STEER_WIRE_SOURCE_SAMPLE per CPU): the addresses in use
 * on the LAN, which no guest may learn.
 *
 * Built vmlinux-free (linux/bpf.h + libbpf's bpf_helpers.h) with
 * clang -O2 -g -target bpf; -g provides the BTF libxdp needs.
 *
 * Multi-buffer (frags): the program reads only the Ethernet header, which
 * is always in the linear part, and takes the frame length from
 * bpf_xdp_get_buff_len() (linear part + frags; Linux 5.18+), so the same
 * code is correct loaded plain (SEC("xdp")) or frags-aware: the loader
 * (lib/nic/xdp_program.cpp) sets BPF_F_XDP_HAS_FRAGS with libxdp's
 * xdp_program__set_xdp_frags_support() where the kernel and driver take it.
 */
/* linux/bpf.h first: bpf_helpers.h needs its types. */
#include <linux/bpf.h>
#include <linux/if_ether.h>

#include <bpf/bpf_helpers.h>
#include <xdp/xdp_helpers.h>

#include "xdp_steer_abi.h"

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, XDP_STEER_MAX_GUEST_MACS);
  __type(key, struct xdp_steer_mac_key);
  __type(value, struct xdp_steer_mac_value);
} guest_macs SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_XSKMAP);
  __uint(max_entries, XDP_STEER_MAX_QUEUES);
  __type(key, __u32);
  __type(value, __u32);
} xsks_map SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct xdp_steer_config);
} config SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, XDP_STEER_STAT_COUNT);
  __type(key, __u32);
  __type(value, __u64);
} stats SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_LRU_HASH);
  __uint(max_entries, XDP_STEER_MAX_WIRE_SOURCES);
  __type(key, struct xdp_steer_mac_key);
  __type(value, __u64);
} wire_sources SEC(".maps");

/* libxdp run configuration: default priority; the dispatcher continues to
 * the next program only after XDP_PASS (our pass-through cases). */
struct {
  __uint(priority, XDP_DEFAULT_RUN_PRIO);
  __uint(XDP_PASS, 1);
} XDP_RUN_CONFIG(xdpvhost_steer);

/* The new per-CPU count of `stat` (0 if the slot cannot be read). */
static __always_inline __u64 count(__u32 stat) {
  __u64* value = bpf_map_lookup_elem(&stats, &stat);

  if (!value) return 0;
  *value += 1; /* per-CPU slot: no atomic needed */
  return *value;
}

/* A known source costs one lookup, and a store once a second at most. */
static __always_inline void remember_source(const struct ethhdr* eth) {
  struct xdp_steer_mac_key key = {};
  __u64 now;
  __u64* seen;

  if (eth->h_source[0] & 1) return; /* a group address is nobody's source */
  __builtin_memcpy(key.addr, eth->h_source, ETH_ALEN);
  now = bpf_ktime_get_coarse_ns();
  seen = bpf_map_lookup_elem(&wire_sources, &key);
  if (seen) {
    if (now - *seen >= XDP_STEER_WIRE_SOURCE_REFRESH_NS) *seen = now;
    return;
  }
  bpf_map_update_elem(&wire_sources, &key, &now, BPF_ANY);
}

SEC("xdp")
int xdpvhost_steer(struct xdp_md* ctx) {
  void* data_end = (void*)(long)ctx->data_end;
  struct ethhdr* eth = (void*)(long)ctx->data;
  struct xdp_steer_mac_key key = {};
  struct xdp_steer_config* cfg;
  __u32 zero = 0;
  long action;

  if ((void*)(eth + 1) > data_end) {
    count(XDP_STEER_STAT_MALFORMED);
    return XDP_PASS;
  }

  cfg = bpf_map_lookup_elem(&config, &zero);
  if (cfg && (cfg->flags & XDP_STEER_CFG_BYPASS)) {
    remember_source(eth);
    count(XDP_STEER_STAT_BYPASSED);
    return XDP_PASS;
  }

  /* Group bit: broadcast and every multicast (ARP, IPv6 ND, ...). */
  if (eth->h_dest[0] & 1) {
    remember_source(eth);
    count(XDP_STEER_STAT_PASSED_FLOOD);
    return XDP_PASS;
  }

  __builtin_memcpy(key.addr, eth->h_dest, ETH_ALEN);
  if (!bpf_map_lookup_elem(&guest_macs, &key)) {
    remember_source(eth);
    count(XDP_STEER_STAT_PASSED_HOST);
    return XDP_PASS;
  }

  /* The whole frame: data_end - data would count only the first buffer
   * of a multi-buffer frame. */
  if (cfg && cfg->max_frame_len && bpf_xdp_get_buff_len(ctx) > cfg->max_frame_len) {
    remember_source(eth);
    count(XDP_STEER_STAT_OVERSIZE_DROPPED);
    return XDP_DROP;
  }

  /* Falls back to XDP_PASS when no socket is bound to this queue. A
   * failure after this point (rx ring full, fill ring empty) shows in
   * the socket's XDP_STATISTICS, not here. */
  action = bpf_redirect_map(&xsks_map, ctx->rx_queue_index, XDP_PASS);
  if (action != XDP_REDIRECT) {
    remember_source(eth);
    count(XDP_STEER_STAT_REDIRECT_FAILED);
  } else if ((count(XDP_STEER_STAT_REDIRECTED) & (XDP_STEER_WIRE_SOURCE_SAMPLE - 1)) == 1) {
    remember_source(eth); /* the first frame, and one in SAMPLE after it */
  }
  return (int)action;
}

char _license[] SEC("license") = "Dual BSD/GPL";
