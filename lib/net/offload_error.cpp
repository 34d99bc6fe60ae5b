#include "net/offload_error.hpp"

#include "sys/enum_names.hpp"

namespace xdpvhost::net {

namespace {

constexpr sys::EnumNames<OffloadError, kOffloadErrorCount> kNames{{
    {OffloadError::none, "none"},
    {OffloadError::gso_bad_type, "gso_bad_type"},
    {OffloadError::gso_bad_size, "gso_bad_size"},
    {OffloadError::gso_size_too_big, "gso_size_too_big"},
    {OffloadError::gso_too_many_segments, "gso_too_many_segments"},
    {OffloadError::gso_bad_hdr_len, "gso_bad_hdr_len"},
    {OffloadError::gso_frame_too_long, "gso_frame_too_long"},
    {OffloadError::gso_ecn_refused, "gso_ecn_refused"},
    {OffloadError::gso_not_ip, "gso_not_ip"},
    {OffloadError::gso_ip_version_mismatch, "gso_ip_version_mismatch"},
    {OffloadError::gso_l4_mismatch, "gso_l4_mismatch"},
    {OffloadError::gso_length_mismatch, "gso_length_mismatch"},
    {OffloadError::gso_uso_no_csum, "gso_uso_no_csum"},
    {OffloadError::ip_fragment, "offload_ip_fragment"},
    {OffloadError::truncated_l2, "offload_truncated_l2"},
    {OffloadError::truncated_l3, "offload_truncated_l3"},
    {OffloadError::bad_ip_header, "offload_bad_ip_header"},
    {OffloadError::bad_ip_length, "offload_bad_ip_length"},
    {OffloadError::ipv6_ext_unsupported, "offload_ipv6_ext_unsupported"},
    {OffloadError::truncated_l4, "offload_truncated_l4"},
    {OffloadError::bad_tcp_header, "offload_bad_tcp_header"},
    {OffloadError::headers_too_long, "offload_headers_too_long"},
    {OffloadError::csum_bad_start, "csum_bad_start"},
    {OffloadError::csum_bad_offset, "csum_bad_offset"},
}};
static_assert(sys::in_enum_order(kNames, kOffloadErrorCount));

}  // namespace

const char* counter_name(OffloadError e) noexcept {
  return sys::name_of(kNames, e);
}

}  // namespace xdpvhost::net
