#include "catalog/op_observer.h"

#include <atomic>

namespace hourglass::catalog {

namespace {
std::atomic<OpObserver*> g_observer{nullptr};
}  // namespace

void SetOpObserver(OpObserver* observer) { g_observer.store(observer, std::memory_order_release); }

OpObserver* GetOpObserver() { return g_observer.load(std::memory_order_acquire); }

OpObserver* OpObserverFor(std::string_view db) { return db == "local" ? nullptr : GetOpObserver(); }

bool ThisServerAcceptsWrites() {
  OpObserver* observer = GetOpObserver();
  return observer == nullptr || observer->AcceptsWrites();
}

}  // namespace hourglass::catalog
