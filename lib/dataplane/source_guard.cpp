#include "dataplane/source_guard.hpp"

#include "dataplane/switch_table.hpp"

namespace xdpvhost::dataplane {

bool SourceGuard::admit_new(const net::MacAddress& src, const SwitchTable* table,
                            const Port* self) noexcept {
  if (src.is_multicast() || src.is_zero()) return false;
  if (policy_ == MacPolicy::kFixed || (policy_ == MacPolicy::kLearn && mac_)) return false;
  if (pending_) return src == candidate_;
  if (refused_ && src == *refused_) return false;
  if (table != nullptr)
    if (const SwitchEntry* owner = table->find_guest(src);
        owner != nullptr && (self == nullptr || owner->port->group() != self->group()))
      return false;
  if (learner_ == nullptr || !learner_->request(src)) return false;
  pending_ = true;
  candidate_ = src;
  return true;
}

void SourceGuard::learned(const net::MacAddress& mac) noexcept {
  mac_ = mac;
  pending_ = false;
  if (refused_ == mac) refused_.reset();
}

void SourceGuard::refused(const net::MacAddress& mac) noexcept {
  refused_ = mac;
  if (pending_ && candidate_ == mac) pending_ = false;
}

}  // namespace xdpvhost::dataplane
