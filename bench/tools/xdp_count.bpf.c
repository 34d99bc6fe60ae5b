// SPDX-License-Identifier: GPL-2.0
// Benchmark sink on the "outside" veth: counts every frame (packets and
// bytes, per CPU) and then drops or passes it, as the loader sets in
// `xvb_config` (0: XDP_DROP, the sink for rate tests; 1: XDP_PASS, so the
// peer's own stack still sees ICMP replies during request/response tests).
#include <linux/bpf.h>
// after linux/bpf.h, which defines the types it uses
#include <bpf/bpf_helpers.h>

#include "xdp_count_abi.h"

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, XVB_COUNT_SLOTS);
  __type(key, __u32);
  __type(value, __u64);
} xvb_counts SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, __u32);
} xvb_config SEC(".maps");

SEC("xdp")
int xvb_count(struct xdp_md* ctx) {
  __u32 key = XVB_COUNT_PACKETS;
  __u64* packets = bpf_map_lookup_elem(&xvb_counts, &key);
  if (packets) *packets += 1;
  key = XVB_COUNT_BYTES;
  __u64* bytes = bpf_map_lookup_elem(&xvb_counts, &key);
  if (bytes) *bytes += (__u64)(ctx->data_end - ctx->data);
  __u32 zero = 0;
  __u32* action = bpf_map_lookup_elem(&xvb_config, &zero);
  return (action && *action == XVB_ACTION_PASS) ? XDP_PASS : XDP_DROP;
}

char LICENSE[] SEC("license") = "GPL";
