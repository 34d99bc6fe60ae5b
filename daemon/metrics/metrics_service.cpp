#include "metrics_service.hpp"

#include <prometheus/text_serializer.h>
#include <spdlog/spdlog.h>

#include "daemon_metrics.hpp"
#include "runtime/health_check.hpp"
#include "listen_address.hpp"
#include "process_metrics.hpp"
#include "uplink_source.hpp"

namespace xdpvhost::daemon::metrics {

MetricsService::MetricsService(boost::asio::io_context& io, Daemon& daemon)
    : io_(io), daemon_(daemon) {}

MetricsService::~MetricsService() {
  stop();
}

bool MetricsService::start(const std::string& listen, std::string& error) {
  if (listen.empty()) return true;
  auto address = parse_listen_address(listen, error);
  if (!address) {
    error = "metrics.listen: " + error;
    return false;
  }
  HttpServer::Options options;
  options.host = address->host;
  options.port = address->port;
  auto server = std::make_unique<HttpServer>(
      io_, options, [this](const HttpRequest& request) { return handle(request); });
  if (!server->start(error)) return false;
  server_ = std::move(server);
  spdlog::info("metrics on http://{}/metrics", listen);
  return true;
}

void MetricsService::stop() {
  if (server_) server_->stop();
  server_.reset();
}

Families MetricsService::collect() {
  Families families;
  add_build_families(families, daemon_);
  const Breakdowns listed =
      daemon_.config().metrics.zero_breakdowns ? Breakdowns::kAll : Breakdowns::kCounted;
  add_port_families(families, daemon_, listed);
  add_thread_families(families, daemon_);
  add_uplink_families(families, collect_uplink_metrics(daemon_), listed);
  add_process_families(families, sys::take_resource_ledger());
  return families;
}

std::string MetricsService::render() {
  return prometheus::TextSerializer().Serialize(collect());
}

HttpResponse MetricsService::handle(const HttpRequest& request) {
  HttpResponse r;
  if (request.path == "/metrics") {
    r.content_type = kPrometheusContentType;
    r.body = exposition();
  } else if (request.path == "/healthz") {
    const Health health = check_health(daemon_);
    if (health.ok()) {
      r.body = "ok\n";
    } else {
      r.status = 503;
      for (const auto& p : health.problems) r.body += p + "\n";
    }
  } else {
    r.status = 404;
    r.body = "not found: try /metrics or /healthz\n";
  }
  return r;
}

}  // namespace xdpvhost::daemon::metrics
