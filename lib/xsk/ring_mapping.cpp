#include "xsk/ring_mapping.hpp"

#include <sys/mman.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

#ifndef SOL_XDP
#define SOL_XDP 283
#endif

namespace xdpvhost::xsk {

namespace {

const xdp_ring_offset& offsets_of(const xdp_mmap_offsets& all, std::uint64_t pgoff) {
  switch (pgoff) {
    case XDP_PGOFF_RX_RING:
      return all.rx;
    case XDP_PGOFF_TX_RING:
      return all.tx;
    case XDP_UMEM_PGOFF_FILL_RING:
      return all.fr;
    default:
      return all.cr;
  }
}

// The size option, then the mapping: producer, consumer, flags and the
// descriptors all live in it at the offsets the kernel reports.
template <class Ring>
bool map_ring(int fd, int option, std::uint64_t pgoff, std::uint32_t entries,
              std::size_t entry_size, const char* name, sys::MemoryMapping& mapping, Ring& ring,
              std::string& error) {
  const int n = static_cast<int>(entries);
  if (::setsockopt(fd, SOL_XDP, option, &n, sizeof n) != 0) {
    error = std::string("xsk: ") + name + " ring of " + std::to_string(entries) +
            " entries: " + std::strerror(errno);
    return false;
  }
  xdp_mmap_offsets all{};
  if (!read_ring_offsets(fd, all, error)) return false;
  const xdp_ring_offset& off = offsets_of(all, pgoff);
  const std::size_t length = off.desc + std::size_t{entries} * entry_size;
  void* map = ::mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd,
                     static_cast<off_t>(pgoff));
  if (map == MAP_FAILED) {
    error = std::string("xsk: mmap of the ") + name + " ring: " + std::strerror(errno);
    return false;
  }
  mapping = sys::MemoryMapping(map, length, sys::MappingKind::kXskRing);
  auto* base = static_cast<std::uint8_t*>(map);
  ring.mask = entries - 1;
  ring.size = entries;
  ring.producer = reinterpret_cast<std::uint32_t*>(base + off.producer);
  ring.consumer = reinterpret_cast<std::uint32_t*>(base + off.consumer);
  ring.flags = reinterpret_cast<std::uint32_t*>(base + off.flags);
  ring.ring = base + off.desc;
  return true;
}

}  // namespace

bool read_ring_offsets(int fd, xdp_mmap_offsets& out, std::string& error) {
  socklen_t len = sizeof out;
  if (::getsockopt(fd, SOL_XDP, XDP_MMAP_OFFSETS, &out, &len) != 0) {
    error = std::string("xsk: getsockopt(XDP_MMAP_OFFSETS): ") + std::strerror(errno);
    return false;
  }
  if (len != sizeof out) {
    error = "xsk: XDP_MMAP_OFFSETS without ring flags (Linux before 5.4 is not supported)";
    return false;
  }
  return true;
}

bool map_producer_ring(int fd, int option, std::uint64_t pgoff, std::uint32_t entries,
                       std::size_t entry_size, const char* name, sys::MemoryMapping& mapping,
                       xsk_ring_prod& ring, std::string& error) {
  if (!map_ring(fd, option, pgoff, entries, entry_size, name, mapping, ring, error)) return false;
  // As libxdp: every entry free (the consumer is `entries` ahead).
  ring.cached_prod = *ring.producer;
  ring.cached_cons = *ring.consumer + entries;
  return true;
}

bool map_consumer_ring(int fd, int option, std::uint64_t pgoff, std::uint32_t entries,
                       std::size_t entry_size, const char* name, sys::MemoryMapping& mapping,
                       xsk_ring_cons& ring, std::string& error) {
  if (!map_ring(fd, option, pgoff, entries, entry_size, name, mapping, ring, error)) return false;
  ring.cached_prod = *ring.producer;
  ring.cached_cons = *ring.consumer;
  return true;
}

}  // namespace xdpvhost::xsk
