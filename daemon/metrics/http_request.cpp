#include "http_request.hpp"

#include <algorithm>
#include <boost/asio/buffer.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/rfc7230.hpp>
#include <cctype>
#include <cstdint>
#include <limits>

namespace xdpvhost::daemon::metrics {

namespace {

namespace beast = boost::beast;
namespace http = boost::beast::http;

HttpParse bad(int status, std::string why) {
  HttpParse p;
  p.status = HttpParse::Status::kBad;
  p.error_status = status;
  p.error = std::move(why);
  return p;
}

std::string to_string(beast::string_view s) {
  return std::string(s.data(), s.size());
}

std::string lower(beast::string_view s) {
  std::string out = to_string(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Beast reads HTTP/1.0 and HTTP/1.1 only. A request line that ends in a
// well-formed version of another major ("GET / HTTP/2.0") is answered 505,
// as RFC 9110 (15.6.6) has it, not 400.
bool other_major_version(std::string_view head) {
  const std::string_view line = head.substr(0, head.find("\r\n"));
  constexpr std::string_view kPrefix = " HTTP/";
  if (line.size() < kPrefix.size() + 3) return false;
  const std::string_view version = line.substr(line.size() - kPrefix.size() - 3);
  auto digit = [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; };
  return version.substr(0, kPrefix.size()) == kPrefix && digit(version[6]) && version[7] == '.' &&
         digit(version[8]) && version[6] != '1';
}

// The origin-form path of a request target: "/metrics" for "/metrics?x=1"
// and for "http://h:9477/metrics".
std::string target_path(std::string_view target) {
  std::string_view path = target;
  if (const std::size_t scheme = path.find("://");
      !path.empty() && path.front() != '/' && scheme != std::string_view::npos) {
    const std::size_t slash = path.find('/', scheme + 3);
    path = slash == std::string_view::npos ? std::string_view("/") : path.substr(slash);
  }
  return std::string(path.substr(0, std::min(path.find('?'), path.find('#'))));
}

// Connection: close wins; HTTP/1.0 stays open only with keep-alive.
bool keeps_alive(const http::request<http::empty_body>& m) {
  bool close = false, keep_alive = false;
  const auto [first, last] = m.equal_range(http::field::connection);
  for (auto field = first; field != last; ++field) {
    for (const auto& token : http::token_list(field->value())) {
      close = close || beast::iequals(token, "close");
      keep_alive = keep_alive || beast::iequals(token, "keep-alive");
    }
  }
  return !close && (m.version() >= 11 || keep_alive);
}

}  // namespace

HttpParse parse_http_request(std::string_view buffer, std::size_t max_head_bytes,
                             HttpRequest& request) {
  request = HttpRequest{};
  // Empty lines before a request line are ignored (RFC 9112, 2.2).
  const std::size_t skipped = std::min(buffer.find_first_not_of("\r\n"), buffer.size());
  if (skipped >= max_head_bytes) return bad(431, "request head too large");
  const std::string_view head = buffer.substr(skipped);

  http::request_parser<http::empty_body> parser;
  parser.header_limit(static_cast<std::uint32_t>(
      std::min<std::size_t>(max_head_bytes - skipped, std::numeric_limits<std::uint32_t>::max())));
  parser.body_limit(0);
  beast::error_code ec;
  const std::size_t used = parser.put(boost::asio::buffer(head.data(), head.size()), ec);
  if (ec == http::error::need_more) {
    if (buffer.size() > max_head_bytes) return bad(431, "request head too large");
    return HttpParse{};
  }
  if (ec == http::error::header_limit || (!ec && skipped + used > max_head_bytes))
    return bad(431, "request head too large");
  if (ec == http::error::body_limit) return bad(413, "request bodies are not accepted");
  if (ec == http::error::bad_version && other_major_version(head))
    return bad(505, "only HTTP/1.x is supported");
  if (ec) return bad(400, "malformed request: " + ec.message());

  const auto& m = parser.get();
  if (m.count(http::field::transfer_encoding) > 0)
    return bad(501, "request bodies are not accepted");
  const std::size_t hosts = m.count(http::field::host);
  if (hosts > 1) return bad(400, "more than one Host header");
  if (m.version() >= 11 && hosts == 0) return bad(400, "HTTP/1.1 request without Host");

  request.method = to_string(m.method_string());
  request.target = to_string(m.target());
  request.path = target_path(request.target);
  request.minor_version = m.version() % 10;
  for (const auto& field : m)
    request.headers.emplace_back(lower(field.name_string()), to_string(field.value()));
  request.keep_alive = keeps_alive(m);
  HttpParse done;
  done.status = HttpParse::Status::kComplete;
  done.consumed = skipped + used;
  return done;
}

}  // namespace xdpvhost::daemon::metrics
