#pragma once
// HTTP/1.1 request heads (RFC 9112) as the metrics listener reads them: the
// request line and header fields up to the empty line, parsed by Boost.Beast's
// request_parser. Bodies are not accepted (GET and HEAD only need none).
// Parsing is a pure function over the bytes received so far, so it is tested
// without sockets.

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace xdpvhost::daemon::metrics {

struct HttpRequest {
  std::string method;     // "GET"
  std::string target;     // "/metrics?x=1" as sent (origin form, or absolute form's path)
  std::string path;       // "/metrics"
  int minor_version = 1;  // HTTP/1.<minor>
  std::vector<std::pair<std::string, std::string>> headers;  // names lower-cased
  bool keep_alive = true;
};

struct HttpParse {
  enum class Status { kIncomplete, kComplete, kBad };
  Status status = Status::kIncomplete;
  std::size_t consumed = 0;  // kComplete: bytes of the head (and leading empty lines)
  int error_status = 0;      // kBad: 400, 413, 431, 501, 505
  std::string error;         // kBad: why
};

// Parses one request head from the start of `buffer`. Empty lines before the
// request line are skipped (RFC 9112, 2.2) but count toward the head. A head
// longer than `max_head_bytes` is 431 (Beast's header_limit); a request with
// a body is 413 (Content-Length > 0: Beast's body_limit is 0) or 501 (any
// Transfer-Encoding); HTTP/2 and later is 505; what Beast refuses (bare LF,
// a malformed request line, field or Content-Length), and an HTTP/1.1
// request without exactly one Host, is 400.
HttpParse parse_http_request(std::string_view buffer, std::size_t max_head_bytes,
                             HttpRequest& request);

}  // namespace xdpvhost::daemon::metrics
