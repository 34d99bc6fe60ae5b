#include "dataplane/source_guard.hpp"

#include "dataplane/switch_table.hpp"

namespace xdpvhost::dataplane {

Admission SourceGuard::admit_new(const net::MacAddress& src, const SwitchTable* table,
                                 const Port* self) noexcept {
  if (src.is_multicast() || src.is_zero()) return Admission::kRefuse;
  switch (policy_) {
    case MacPolicy::kFixed:  // its own MAC only, and only while another port holds it
      if (mac_ || src != configured_) return Admission::kRefuse;
      break;
    case MacPolicy::kLearn:
      if (mac_) return Admission::kRefuse;
      break;
    case MacPolicy::kLearnMove:
      break;
  }
  if (pending_) return src == candidate_ ? Admission::kHold : Admission::kRefuse;
  // A refused fixed MAC is asked for again (at the bucket's rate): it is the
  // only one the port may have, and its holder's guest may leave later.
  if (refused_ && src == *refused_ && policy_ != MacPolicy::kFixed) return Admission::kRefuse;
  if (table != nullptr && policy_ == MacPolicy::kLearn)
    if (const SwitchEntry* owner = table->find_guest(src);
        owner != nullptr && (self == nullptr || owner->port->group() != self->group())) {
      if (owned_ == src) return Admission::kRefuse;  // counted already
      owned_ = src;
      return Admission::kRefuseOwned;
    }
  if (learner_ == nullptr) return Admission::kRefuse;
  if (!requests_.allow()) return Admission::kRefuseRateLimited;
  if (!learner_->request(src)) return Admission::kRefuse;
  pending_ = true;
  candidate_ = src;
  return Admission::kHold;
}

void SourceGuard::learned(const net::MacAddress& mac) noexcept {
  mac_ = mac;
  pending_ = false;
  if (refused_ == mac) refused_.reset();
}

void SourceGuard::released() noexcept {
  mac_.reset();
  pending_ = false;
}

void SourceGuard::refused(const net::MacAddress& mac) noexcept {
  refused_ = mac;
  if (pending_ && candidate_ == mac) pending_ = false;
}

}  // namespace xdpvhost::dataplane
