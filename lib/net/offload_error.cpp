#include "net/offload_error.hpp"

namespace xdpvhost::net {

const char* counter_name(OffloadError e) noexcept {
  switch (e) {
    case OffloadError::none:
      return "none";
    case OffloadError::gso_bad_type:
      return "gso_bad_type";
    case OffloadError::gso_bad_size:
      return "gso_bad_size";
    case OffloadError::gso_size_too_big:
      return "gso_size_too_big";
    case OffloadError::gso_too_many_segments:
      return "gso_too_many_segments";
    case OffloadError::gso_bad_hdr_len:
      return "gso_bad_hdr_len";
    case OffloadError::gso_frame_too_long:
      return "gso_frame_too_long";
    case OffloadError::gso_ecn_refused:
      return "gso_ecn_refused";
    case OffloadError::gso_not_ip:
      return "gso_not_ip";
    case OffloadError::gso_ip_version_mismatch:
      return "gso_ip_version_mismatch";
    case OffloadError::gso_l4_mismatch:
      return "gso_l4_mismatch";
    case OffloadError::gso_length_mismatch:
      return "gso_length_mismatch";
    case OffloadError::gso_uso_no_csum:
      return "gso_uso_no_csum";
    case OffloadError::ip_fragment:
      return "offload_ip_fragment";
    case OffloadError::truncated_l2:
      return "offload_truncated_l2";
    case OffloadError::truncated_l3:
      return "offload_truncated_l3";
    case OffloadError::bad_ip_header:
      return "offload_bad_ip_header";
    case OffloadError::bad_ip_length:
      return "offload_bad_ip_length";
    case OffloadError::ipv6_ext_unsupported:
      return "offload_ipv6_ext_unsupported";
    case OffloadError::truncated_l4:
      return "offload_truncated_l4";
    case OffloadError::bad_tcp_header:
      return "offload_bad_tcp_header";
    case OffloadError::headers_too_long:
      return "offload_headers_too_long";
    case OffloadError::csum_bad_start:
      return "csum_bad_start";
    case OffloadError::csum_bad_offset:
      return "csum_bad_offset";
  }
  return "unknown";
}

}  // namespace xdpvhost::net
