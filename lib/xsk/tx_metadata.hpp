#pragma once
// AF_XDP TX metadata (Linux 6.8+, Documentation/networking/xsk-tx-metadata.rst):
// the UMEM is registered with tx_metadata_len bytes reserved right before
// every TX descriptor's addr; a descriptor whose options carry
// XDP_TX_METADATA has a struct xsk_tx_metadata there, and its
// XDP_TXMD_FLAGS_CHECKSUM asks for an skb-style checksum: the device (or,
// in copy mode, the kernel's skb: CHECKSUM_PARTIAL) sums the packet from
// csum_start on and stores the result at csum_start + csum_offset, where
// the pseudo-header sum was left.
//
// Debian 12's linux/if_xdp.h (Linux 6.1) has none of this, nor does its
// libxdp 1.3.1 (xsk_umem_config has no tx_metadata_len), which is why
// Umem registers the area itself: the definitions below are the kernel's
// UAPI values, spelled out once here.
//
// Every TX descriptor of a UMEM registered with metadata room must start
// at least tx_metadata_len bytes into its frame (the kernel checks
// addr - tx_metadata_len against the frame), whether or not it carries
// metadata: Umem::tx_offset().

#include <cstdint>

namespace xdpvhost::xsk {

// struct xdp_umem_reg as of Linux 6.8 (the 6.1 header ends at flags).
struct UmemRegistration {
  std::uint64_t addr = 0;
  std::uint64_t len = 0;
  std::uint32_t chunk_size = 0;
  std::uint32_t headroom = 0;
  std::uint32_t flags = 0;
  std::uint32_t tx_metadata_len = 0;
};
static_assert(sizeof(UmemRegistration) == 32);

// xdp_umem_reg.flags: tx_metadata_len is meant (XDP_UMEM_TX_METADATA_LEN).
// Linux 6.11+ take it; older kernels refuse the unknown flag with EINVAL.
// Umem asks only this way: 6.8-6.10 would read the field without the flag,
// but kernels before 6.8 would ignore it there and then refuse every
// descriptor with XDP_TX_METADATA -- the flag is the one safe answer.
inline constexpr std::uint32_t kUmemTxMetadataLen = 1U << 2;
// xdp_desc.options: this descriptor has metadata before it (XDP_TX_METADATA).
inline constexpr std::uint32_t kTxMetadataOption = 1U << 1;
// xsk_tx_metadata.flags: request a checksum (XDP_TXMD_FLAGS_CHECKSUM).
inline constexpr std::uint64_t kTxMetadataChecksum = 1U << 1;

// union xsk_tx_metadata, request side (Linux 6.14 added launch_time; the
// 6.8 layout is the first 12 bytes).
struct TxMetadata {
  std::uint64_t flags = 0;
  std::uint16_t csum_start = 0;   // from the start of the packet
  std::uint16_t csum_offset = 0;  // from csum_start to the checksum field
  std::uint32_t reserved = 0;
  std::uint64_t launch_time = 0;
};
static_assert(sizeof(TxMetadata) == 24);

// The room reserved before each TX descriptor: the whole struct, a
// multiple of 8 as the kernel requires.
inline constexpr std::uint32_t kTxMetadataLen = sizeof(TxMetadata);

}  // namespace xdpvhost::xsk
