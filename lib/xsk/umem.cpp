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

#include "xsk/ring_mapping.hpp"
#include "xsk/tx_metadata.hpp"

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

  std::unique_ptr<Umem> umem(
      new Umem(config, sys::MemoryMapping(addr, length, sys::MappingKind::kUmem), huge));
  if (!umem->register_area(error)) return nullptr;
  return umem;
}

// XDP_UMEM_REG on a socket of our own, then the FILL and COMPLETION rings
// (what xsk_umem__create does, plus the TX metadata room).
bool Umem::register_area(std::string& error) {
  fd_.reset(::socket(AF_XDP, SOCK_RAW | SOCK_CLOEXEC, 0));
  if (!fd_.valid()) {
    error = std::string("umem: socket(AF_XDP): ") + std::strerror(errno);
    return false;
  }
  UmemRegistration reg;
  reg.addr = reinterpret_cast<std::uintptr_t>(area_.data());
  reg.len = std::uint64_t{config_.frame_size} * config_.frame_count;
  reg.chunk_size = config_.frame_size;
  reg.headroom = config_.frame_headroom;
  const auto register_with = [&](std::uint32_t flags, std::uint32_t metadata_len) {
    reg.flags = flags;
    reg.tx_metadata_len = metadata_len;
    return ::setsockopt(fd_.get(), SOL_XDP, XDP_UMEM_REG, &reg, sizeof reg) == 0;
  };
  bool registered = false;
  if (config_.tx_metadata) {
    registered = register_with(kUmemTxMetadataLen, kTxMetadataLen);
    if (registered) {
      tx_offset_ = kTxMetadataLen;
    } else {
      tx_metadata_refusal_ =
          std::string("TX metadata refused (Linux 6.11+ needed): ") + std::strerror(errno);
    }
  }
  if (!registered && !register_with(0, 0)) {
    error = std::string("umem: XDP_UMEM_REG: ") + std::strerror(errno);
    return false;
  }
  return map_producer_ring(fd_.get(), XDP_UMEM_FILL_RING, XDP_UMEM_PGOFF_FILL_RING,
                           config_.fill_size, sizeof(std::uint64_t), "fill", fill_map_, fill_,
                           error) &&
         map_consumer_ring(fd_.get(), XDP_UMEM_COMPLETION_RING, XDP_UMEM_PGOFF_COMPLETION_RING,
                           config_.comp_size, sizeof(std::uint64_t), "completion", comp_map_, comp_,
                           error);
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
