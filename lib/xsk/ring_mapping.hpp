#pragma once
// The four rings of an AF_XDP socket, mapped as libxdp's xsk_socket__create
// and xsk_umem__create map them (tools/lib/bpf/xsk.c, libxdp xsk.c), so
// that libxdp's inline ring helpers in <xdp/xsk.h> -- the memory orders of
// Documentation/networking/af_xdp.rst -- work on them unchanged: FILL and
// COMPLETION on the UMEM's socket, RX and TX on the socket bound to a
// queue. The registration itself is ours (Umem): Debian 12's libxdp cannot
// reserve TX metadata room (tx_metadata.hpp).

#include <linux/if_xdp.h>
#include <xdp/xsk.h>

#include <cstdint>
#include <string>

#include "sys/memory_mapping.hpp"

namespace xdpvhost::xsk {

// getsockopt(XDP_MMAP_OFFSETS) with the flags fields (Linux 5.4+).
bool read_ring_offsets(int fd, xdp_mmap_offsets& out, std::string& error);

// Sets the ring's size on the socket (setsockopt `option`), maps it at
// `pgoff` and points `ring` into the mapping. A producer ring (FILL, TX)
// starts with all `entries` free, a consumer ring (RX, COMPLETION) empty.
bool map_producer_ring(int fd, int option, std::uint64_t pgoff, std::uint32_t entries,
                       std::size_t entry_size, const char* name, sys::MemoryMapping& mapping,
                       xsk_ring_prod& ring, std::string& error);
bool map_consumer_ring(int fd, int option, std::uint64_t pgoff, std::uint32_t entries,
                       std::size_t entry_size, const char* name, sys::MemoryMapping& mapping,
                       xsk_ring_cons& ring, std::string& error);

}  // namespace xdpvhost::xsk
