#pragma once
// The metrics listener (config metrics.listen): GET /metrics answers the
// Prometheus text format (0.0.4) with every xdpvhost_* metric, GET /healthz
// 200 "ok" while the daemon is healthy (runtime/health_check.hpp) and 503 with the
// problems otherwise, anything else 404.
//
// A scrape builds the families as prometheus-cpp's data model
// (prometheus::MetricFamily, family_builder.hpp) and prometheus-cpp's
// TextSerializer writes them. The HTTP side is our own small server
// (http_server.hpp) on the control thread's io_context, not prometheus-cpp's
// Exposer: the Exposer answers on its own civetweb threads, which would read
// the daemon's port and uplink maps while port.add/port.remove change them on
// the control thread, and it has no way to answer /healthz with a 503. On the
// control thread a scrape reads that state without locks; the datapath
// counters it reads are single-writer relaxed atomics.

#include <boost/asio/io_context.hpp>
#include <memory>
#include <string>

#include "runtime/daemon.hpp"
#include "exposition_cache.hpp"
#include "family_builder.hpp"
#include "http_server.hpp"

namespace xdpvhost::daemon::metrics {

inline constexpr const char* kPrometheusContentType = "text/plain; version=0.0.4; charset=utf-8";
// How long a rendered /metrics body answers requests (exposition_cache.hpp).
inline constexpr std::chrono::milliseconds kExpositionMaxAge{1000};

class MetricsService {
 public:
  MetricsService(boost::asio::io_context& io, Daemon& daemon);
  ~MetricsService();
  MetricsService(const MetricsService&) = delete;
  MetricsService& operator=(const MetricsService&) = delete;

  // Listens on `listen` ("host:port", "[v6]:port"); "" leaves it off.
  bool start(const std::string& listen, std::string& error);
  void stop();
  bool listening() const noexcept { return server_ != nullptr; }
  std::uint16_t port() const { return server_ ? server_->bound_port() : 0; }

  // Every family, read now.
  Families collect();
  // collect() in the text format, rendered now.
  std::string render();
  // The /metrics body: render()'s, at most kExpositionMaxAge old.
  const std::string& exposition() { return exposition_.body(); }
  HttpResponse handle(const HttpRequest& request);

 private:
  boost::asio::io_context& io_;
  Daemon& daemon_;
  ExpositionCache exposition_{[this] { return render(); }, kExpositionMaxAge};
  std::unique_ptr<HttpServer> server_;
};

}  // namespace xdpvhost::daemon::metrics
