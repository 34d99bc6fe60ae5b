#include "http_request.hpp"

#include <gtest/gtest.h>

namespace xdpvhost::daemon::metrics {
namespace {

using Status = HttpParse::Status;

HttpParse parse(std::string_view text, HttpRequest& r, std::size_t limit = 8192) {
  return parse_http_request(text, limit, r);
}

TEST(HttpRequest, SimpleGet) {
  HttpRequest r;
  const std::string text = "GET /metrics HTTP/1.1\r\nHost: x\r\nAccept: */*\r\n\r\nGET";
  auto p = parse(text, r);
  ASSERT_EQ(p.status, Status::kComplete) << p.error;
  EXPECT_EQ(p.consumed, text.size() - 3);
  EXPECT_EQ(r.method, "GET");
  EXPECT_EQ(r.path, "/metrics");
  EXPECT_EQ(r.minor_version, 1);
  EXPECT_TRUE(r.keep_alive);
  ASSERT_EQ(r.headers.size(), 2u);
  EXPECT_EQ(r.headers[1].first, "accept");
  EXPECT_EQ(r.headers[1].second, "*/*");
}

TEST(HttpRequest, IncompleteUntilTheEmptyLine) {
  const std::string text = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";
  for (std::size_t n = 0; n < text.size(); ++n) {
    HttpRequest r;
    EXPECT_EQ(parse(text.substr(0, n), r).status, Status::kIncomplete) << n;
  }
  HttpRequest r;
  EXPECT_EQ(parse(text, r).status, Status::kComplete);
}

TEST(HttpRequest, QueryAbsoluteFormLeadingEmptyLines) {
  HttpRequest r;
  const std::string text = "\r\n\nGET http://h:9477/metrics?x=1 HTTP/1.1\r\nHost: h\r\n\r\n";
  auto p = parse(text, r);
  ASSERT_EQ(p.status, Status::kComplete) << p.error;
  EXPECT_EQ(p.consumed, text.size());
  EXPECT_EQ(r.path, "/metrics");
  EXPECT_EQ(r.target, "http://h:9477/metrics?x=1");
  HttpRequest q;
  ASSERT_EQ(parse("GET /healthz?verbose HTTP/1.1\r\nHost: h\r\n\r\n", q).status, Status::kComplete);
  EXPECT_EQ(q.path, "/healthz");
}

TEST(HttpRequest, KeepAliveRules) {
  HttpRequest r;
  ASSERT_EQ(parse("GET / HTTP/1.0\r\n\r\n", r).status, Status::kComplete);
  EXPECT_FALSE(r.keep_alive);
  ASSERT_EQ(parse("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n", r).status, Status::kComplete);
  EXPECT_TRUE(r.keep_alive);
  ASSERT_EQ(parse("GET / HTTP/1.1\r\nHost: h\r\nConnection: keep-alive, close\r\n\r\n", r).status,
            Status::kComplete);
  EXPECT_FALSE(r.keep_alive);
  ASSERT_EQ(parse("GET / HTTP/1.0\r\nConnection: close, keep-alive\r\n\r\n", r).status,
            Status::kComplete);
  EXPECT_FALSE(r.keep_alive);
  ASSERT_EQ(parse("GET / HTTP/1.1\r\nHost: h\r\nConnection: Upgrade\r\n\r\n", r).status,
            Status::kComplete);
  EXPECT_TRUE(r.keep_alive);
}

// RFC 9112 (5.2) lets a server either refuse obsolete line folding or
// replace it with a space; Beast does the latter.
TEST(HttpRequest, FoldedFieldLineIsJoined) {
  HttpRequest r;
  ASSERT_EQ(parse("GET / HTTP/1.1\r\nHost: h\r\nX: a\r\n b\r\n\r\n", r).status, Status::kComplete);
  ASSERT_EQ(r.headers.size(), 2u);
  EXPECT_EQ(r.headers[1].second, "a b");
}

TEST(HttpRequest, ZeroContentLengthIsFine) {
  HttpRequest r;
  EXPECT_EQ(parse("GET / HTTP/1.1\r\nHost: h\r\nContent-Length: 000\r\n\r\n", r).status,
            Status::kComplete);
}

struct BadCase {
  const char* text;
  int status;
};

TEST(HttpRequest, Refusals) {
  const BadCase cases[] = {
      {"GET /metrics\r\n\r\n", 400},
      {"GET  /metrics HTTP/1.1\r\nHost: h\r\n\r\n", 400},
      {"GET /metrics HTTP/1.1 extra\r\nHost: h\r\n\r\n", 400},
      {"G(T /metrics HTTP/1.1\r\nHost: h\r\n\r\n", 400},
      {"GET /m\x01 HTTP/1.1\r\nHost: h\r\n\r\n", 400},
      {"GET /metrics HTTP/1.x\r\nHost: h\r\n\r\n", 400},
      {"GET /metrics FTP/1.1\r\nHost: h\r\n\r\n", 400},
      {"GET /metrics HTTP/2.0\r\nHost: h\r\n\r\n", 505},
      {"GET /metrics HTTP/1.1\r\n\r\n", 400},  // no Host
      {"GET /metrics HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400},
      {"GET /metrics HTTP/1.1\r\nHost: h\r\nBad Header: x\r\n\r\n", 400},
      {"GET /metrics HTTP/1.1\r\nHost: h\r\nNoColon\r\n\r\n", 400},
      {"GET /metrics HTTP/1.1\r\nHost: h\rX\r\n\r\n", 400},
      {"GET /metrics HTTP/1.1\nHost: h\n\n", 400},  // bare LF line ends
      {"GET /metrics HTTP/1.1\r\nHost: h\r\nX: a\x01\r\n\r\n", 400},
      {"GET /metrics HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nhello", 413},
      {"GET /metrics HTTP/1.1\r\nHost: h\r\nContent-Length: -1\r\n\r\n", 400},
      {"GET /metrics HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\nContent-Length: 1\r\n\r\n", 400},
      {"GET /metrics HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n", 501},
  };
  for (const auto& c : cases) {
    HttpRequest r;
    auto p = parse(c.text, r);
    EXPECT_EQ(p.status, Status::kBad) << c.text;
    EXPECT_EQ(p.error_status, c.status) << c.text << " " << p.error;
    EXPECT_FALSE(p.error.empty());
  }
}

TEST(HttpRequest, HeadLimit) {
  std::string big = "GET /metrics HTTP/1.1\r\nHost: h\r\nX: " + std::string(200, 'a');
  HttpRequest r;
  EXPECT_EQ(parse(big, r, 100).error_status, 431);               // no end in sight
  EXPECT_EQ(parse(big + "\r\n\r\n", r, 100).error_status, 431);  // complete but too long
  EXPECT_EQ(parse(big + "\r\n\r\n", r, 1000).status, Status::kComplete);
  // Under the limit and incomplete: wait for more.
  EXPECT_EQ(parse("GET /metrics HTTP/1.1\r\nHo", r, 100).status, Status::kIncomplete);
  // Endless empty lines count too.
  EXPECT_EQ(parse(std::string(200, '\n'), r, 100).error_status, 431);
}

}  // namespace
}  // namespace xdpvhost::daemon::metrics
