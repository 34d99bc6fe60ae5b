#include "dataplane/dataplane.hpp"

#include <algorithm>
#include <stdexcept>
#include <thread>
#include <utility>

namespace xdpvhost::dataplane {

Dataplane::Dataplane(Options options) : tunables_(options.tunables) {
  if (options.threads == 0) options.threads = 1;
  std::vector<ServiceThread*> all;
  for (std::uint16_t i = 0; i < options.threads; ++i) {
    std::optional<int> cpu;
    if (i < options.cpus.size()) cpu = options.cpus[i];
    threads_.push_back(std::make_unique<ServiceThread>(i, cpu, tunables_));
    all.push_back(threads_.back().get());
  }
  for (auto& t : threads_) t->connect(all);
  for (auto& t : threads_) t->start();
  publish_table();
}

void Dataplane::watch_threads() {
  if (watcher_) return;
  std::vector<ServiceThread*> threads;
  for (auto& t : threads_) threads.push_back(t.get());
  watcher_ = std::make_unique<ThreadWatcher>(std::move(threads));
}

Dataplane::~Dataplane() {
  watcher_.reset();  // before the threads it signals end
  for (auto& t : threads_) t->stop();
}

std::vector<Dataplane::Placement> Dataplane::placements() const {
  std::vector<Placement> out;
  out.reserve(entries_.size());
  for (const auto& e : entries_) out.push_back(Placement{e.port, e.thread});
  return out;
}

std::uint16_t Dataplane::least_loaded_thread() const {
  std::vector<unsigned> load(threads_.size(), 0);
  for (const auto& e : entries_) ++load[e.thread];
  return static_cast<std::uint16_t>(std::min_element(load.begin(), load.end()) - load.begin());
}

void Dataplane::attach(Port& port, std::uint16_t thread, std::optional<net::MacAddress> mac) {
  if (thread >= threads_.size()) throw std::out_of_range("service thread index");
  ServiceThread* t = threads_[thread].get();
  Port* p = &port;
  t->call([t, p] { t->attach_port(p); });
  entries_.push_back(SwitchEntry{&port, port.id(), thread, port.kind(), port.uplink(), mac});
  publish_table();
}

void Dataplane::attach_group(Port& group, std::uint16_t thread, const Port& first) {
  if (thread >= threads_.size()) throw std::out_of_range("service thread index");
  group.set_group(first.id());
  ServiceThread* t = threads_[thread].get();
  Port* p = &group;
  t->call([t, p] { t->attach_port(p); });
  SwitchEntry e{&group, group.id(), thread, group.kind(), group.uplink(), {}};
  e.secondary = true;
  entries_.push_back(std::move(e));
  publish_table();
}

void Dataplane::set_rx_groups(const Port& first, const std::vector<const Port*>& groups) {
  for (auto& e : entries_)
    if (e.port == &first) {
      e.rx_groups.clear();
      for (const Port* g : groups) e.rx_groups.push_back(g->id());
    }
  publish_table();
}

void Dataplane::set_mac(const Port& port, std::optional<net::MacAddress> mac) {
  for (auto& e : entries_)
    if (e.port == &port) e.mac = mac;
  publish_table();
}

void Dataplane::set_l2_domains(L2Domains joined) {
  l2_domains_ = std::move(joined);
  publish_table();
}

const Port* Dataplane::owner_of(const net::MacAddress& mac) const noexcept {
  for (const auto& e : entries_)
    if (e.kind == PortKind::kGuest && e.mac == mac) return e.port;
  return nullptr;
}

void Dataplane::detach(Port& port) {
  auto it = std::find_if(entries_.begin(), entries_.end(),
                         [&](const SwitchEntry& e) { return e.port == &port; });
  if (it == entries_.end()) return;
  const std::uint16_t thread = it->thread;
  entries_.erase(it);
  publish_table();
  ServiceThread* t = threads_[thread].get();
  Port* p = &port;
  t->call([t, p] { t->detach_port(p); });
}

Dataplane::Move Dataplane::move(Port& port, std::uint16_t to) {
  if (to >= threads_.size()) throw std::out_of_range("service thread index");
  const auto entry = [&]() -> SwitchEntry& {
    for (auto& e : entries_)
      if (e.port == &port) return e;
    throw std::logic_error("port is not attached");
  };
  Move m;
  m.from = entry().thread;
  const auto count = [&](MoveOutcome outcome) {
    m.outcome = outcome;
    ++move_counts_[static_cast<std::size_t>(outcome)];
    return m;
  };
  if (m.from == to) return count(MoveOutcome::kAlreadyThere);
  ServiceThread* from = threads_[m.from].get();
  ServiceThread* dest = threads_[to].get();
  if (from->stalled() || dest->stalled()) return count(MoveOutcome::kThreadStalled);

  const auto start = std::chrono::steady_clock::now();
  entry().moving = true;
  publish_table();
  Port* p = &port;
  bool released = false;
  for (;;) {
    released = from->call([from, p] { return from->release_port(p); });
    if (released || from->stalled() || std::chrono::steady_clock::now() - start >= kMoveDeadline)
      break;
    std::this_thread::sleep_for(kMoveRetry);
  }
  if (released) {
    dest->call([dest, p] { dest->attach_port(p); });
    entry().thread = to;
  }
  entry().moving = false;
  publish_table();
  m.took = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() -
                                                                 start);
  if (released) return count(MoveOutcome::kMoved);
  return count(from->stalled() ? MoveOutcome::kThreadStalled : MoveOutcome::kNotSettled);
}

std::uint16_t Dataplane::thread_of(const Port& port) const {
  for (const auto& e : entries_)
    if (e.port == &port) return e.thread;
  throw std::logic_error("port is not attached");
}

void Dataplane::set_tunables(const Tunables& t) {
  tunables_ = t;
  for (auto& thread : threads_) {
    ServiceThread* th = thread.get();
    th->call([th, t] { th->set_tunables(t); });
  }
}

void Dataplane::publish_table() {
  auto table = std::make_shared<SwitchTable>();
  for (const auto& e : entries_) table->add(e);
  table->finish(thread_count(), l2_domains_);
  std::shared_ptr<const SwitchTable> shared = table;
  for (auto& thread : threads_) {
    ServiceThread* th = thread.get();
    th->call([th, shared] { th->set_table(shared); });
  }
}

}  // namespace xdpvhost::dataplane
