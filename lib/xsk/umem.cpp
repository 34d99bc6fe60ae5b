#include "xsk/umem.hpp"

#include <linux/if_xdp.h>
#include <sys/mman.h>
#include <sys/socket.h>

#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#ifndef SOL_XDP
#define SOL_XDP 283
#endif

namespace xdpvhost::xsk {

namespace {

constexpr std::size_t kHugePageSize = std::size_t{2} << 20;

std::size_t round_up(std::size_t value, std::size_t unit) {
  return (value + unit - 1) / unit * unit;
}

bool valid_ring_size(std::uint32_t n) {
  return n != 0 && std::has_single_bit(n);
}

}  // namespace

Umem::Umem(const UmemConfig& config, sys::MemoryMapping area, bool hugepages)
    : config_(config),
      area_(std::move(area)),
      on_hugepages_(hugepages),
      frames_(config.frame_size, config.frame_count) {}

std::unique_ptr<Umem> Umem::create(const UmemConfig& config, std::string& error) {
  if (config.frame_size != 2048 && config.frame_size != 4096) {
    error = "umem: frame_size must be 2048 or 4096";
    return nullptr;
  }
  if (config.frame_count == 0 || !valid_ring_size(config.fill_size) ||
      !valid_ring_size(config.comp_size)) {
    error = "umem: frame_count must be > 0 and ring sizes powers of two";
    return nullptr;
  }
  if (config.frame_headroom + XDP_PACKET_HEADROOM + 64 > config.frame_size) {
    error = "umem: frame_headroom leaves no room for a frame";
    return nullptr;
  }

  const std::size_t bytes = std::size_t{config.frame_size} * config.frame_count;
  void* addr = MAP_FAILED;
  bool huge = false;
  std::size_t length = round_up(bytes, static_cast<std::size_t>(getpagesize()));
  if (config.hugepages) {
    const std::size_t huge_length = round_up(bytes, kHugePageSize);
    addr = ::mmap(nullptr, huge_length, PROT_READ | PROT_WRITE,
                  MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB | MAP_POPULATE, -1, 0);
    if (addr != MAP_FAILED) {
      huge = true;
      length = huge_length;
    }
  }
  if (addr == MAP_FAILED) {
    addr = ::mmap(nullptr, length, PROT_READ | PROT_WRITE,
                  MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
  }
  if (addr == MAP_FAILED) {
    error = std::string("umem: mmap: ") + std::strerror(errno);
    return nullptr;
  }

  std::unique_ptr<Umem> umem(new Umem(config, sys::MemoryMapping(addr, length), huge));
  xsk_umem_config cfg{};
  cfg.fill_size = config.fill_size;
  cfg.comp_size = config.comp_size;
  cfg.frame_size = config.frame_size;
  cfg.frame_headroom = config.frame_headroom;
  cfg.flags = 0;
  const int err = xsk_umem__create(&umem->umem_, addr, bytes, &umem->fill_, &umem->comp_, &cfg);
  if (err != 0) {
    umem->umem_ = nullptr;
    error = std::string("umem: xsk_umem__create: ") + std::strerror(-err);
    return nullptr;
  }
  return umem;
}

// libxdp unmaps the fill/completion rings only when a socket that used them
// is deleted; a Umem that never got a socket would leak the two mappings.
void Umem::unmap_unused_rings() noexcept {
  xdp_mmap_offsets off{};
  socklen_t len = sizeof off;
  if (::getsockopt(fd(), SOL_XDP, XDP_MMAP_OFFSETS, &off, &len) != 0 || len != sizeof off) return;
  if (fill_.ring != nullptr) {
    ::munmap(static_cast<std::uint8_t*>(fill_.ring) - off.fr.desc,
             off.fr.desc + std::size_t{config_.fill_size} * sizeof(std::uint64_t));
  }
  if (comp_.ring != nullptr) {
    ::munmap(static_cast<std::uint8_t*>(comp_.ring) - off.cr.desc,
             off.cr.desc + std::size_t{config_.comp_size} * sizeof(std::uint64_t));
  }
}

Umem::~Umem() {
  if (umem_ == nullptr) return;
  if (!socket_bound_) unmap_unused_rings();
  if (xsk_umem__delete(umem_) != 0) {
    // A socket still uses this UMEM: the kernel would keep DMA/copying into
    // memory we are about to unmap. This is a lifetime bug in the caller.
    std::fprintf(stderr, "xsk::Umem destroyed while a socket still uses it\n");
    std::abort();
  }
}

std::uint32_t Umem::max_rx_frame_len() const noexcept {
  return config_.frame_size - XDP_PACKET_HEADROOM - config_.frame_headroom;
}

std::uint32_t Umem::refill(std::uint32_t max) noexcept {
  std::uint32_t n = frames_.available();
  if (n > max) n = max;
  if (n == 0) return 0;
  n = std::min(n, fill_free(n));
  if (n == 0) return 0;
  std::uint32_t idx = 0;
  if (fill_reserve(n, idx) != n) return 0;
  for (std::uint32_t i = 0; i < n; ++i) fill_set(idx + i, frames_.alloc());
  fill_submit(n);
  return n;
}

std::uint32_t Umem::reclaim_completions(std::uint32_t max) noexcept {
  std::uint32_t idx = 0;
  const std::uint32_t n = comp_peek(max, idx);
  for (std::uint32_t i = 0; i < n; ++i) frames_.free(comp_addr(idx + i));
  if (n != 0) comp_release(n);
  return n;
}

}  // namespace xdpvhost::xsk
