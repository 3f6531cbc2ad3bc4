#pragma once
// Test helper: a backend whose devices fail every allocation after the first `budget` calls (a
// device that breaks in the middle of a run), all of them or only the one opened as `only`;
// everything else is the wrapped backend's. It also counts the unvectorized elementwise passes
// its devices ran, the bytes they copied from device to device, and the all-gathers and
// all-to-alls its communicators ran, and keeps the GEMM shapes run.

#include <array>
#include <atomic>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "exec/backend.hpp"
#include "tests/support/forwarding_communicator.hpp"

namespace hetsim::test {

class FlakyBackend final : public exec::Backend {
  struct Shapes {
    std::mutex mutex;
    std::set<std::array<int, 3>> run;
    std::map<std::array<int, 3>, int> calls;
  };

 public:
  FlakyBackend(std::unique_ptr<exec::Backend> inner, int budget, int only = -1)
      : inner_(std::move(inner)), budget_(budget), only_(only) {}
  std::string name() const override { return "flaky"; }
  int device_count() const override { return inner_->device_count(); }
  std::unique_ptr<exec::Device> open(int index) override {
    struct Flaky final : exec::Device {
      std::unique_ptr<exec::Device> d;
      int left;
      std::shared_ptr<std::atomic<long>> unvectorized;
      std::shared_ptr<std::atomic<long>> copied;
      std::shared_ptr<Shapes> shapes;
      std::string name() const override { return "flaky" + d->name(); }
      Result<void*> allocate(std::size_t bytes) override {
        if (--left < 0) return Diagnostic{{}, "", name() + ": device lost", ""};
        return d->allocate(bytes);
      }
      void release(void* p, std::size_t b) override { d->release(p, b); }
      void* workspace(int slot, std::size_t n) override { return d->workspace(slot, n); }
      void gemm(int m, int n, int k, exec::Format f, const void* a, const void* b, void* c) override {
        {
          std::lock_guard lock(shapes->mutex);
          shapes->run.insert({m, n, k});
          ++shapes->calls[{m, n, k}];
        }
        d->gemm(m, n, k, f, a, b, c);
      }
      void attention(const exec::AttentionShape& s, exec::Format f, const void* qkv, void* o, void* g, bool bwd) override {
        d->attention(s, f, qkv, o, g, bwd);
      }
      void norm(int r, int c, exec::Format f, const void* x, void* y, bool bwd) override { d->norm(r, c, f, x, y, bwd); }
      void elementwise(std::size_t n, exec::Format f, const void* s, void* t) override { d->elementwise(n, f, s, t); }
      void elementwise_unvectorized(std::size_t n, exec::Format f, const void* s, void* t) override {
        ++*unvectorized;
        d->elementwise_unvectorized(n, f, s, t);
      }
      void adam(std::size_t n, float* state) override { d->adam(n, state); }
      void copy(const void* s, void* t, std::size_t n) override {
        *copied += static_cast<long>(n);
        d->copy(s, t, n);
      }
      void to_host(const void* s, void* h, std::size_t n) override { d->to_host(s, h, n); }
      void from_host(const void* h, void* t, std::size_t n) override { d->from_host(h, t, n); }
      bool host_memory() const override { return true; }
      int record() override { return d->record(); }
      std::vector<std::int64_t> resolve() override { return d->resolve(); }
      std::size_t live_bytes() const override { return d->live_bytes(); }
      std::size_t peak_bytes() const override { return d->peak_bytes(); }
      std::size_t capacity() const override { return d->capacity(); }
    };
    auto f = std::make_unique<Flaky>();
    f->d = inner_->open(index);
    f->left = only_ < 0 || index == only_ ? budget_ : std::numeric_limits<int>::max();
    f->unvectorized = unvectorized_;
    f->copied = copied_;
    f->shapes = shapes_;
    return f;
  }
  /// The distinct GEMM shapes (m, n, k) its devices ran so far.
  [[nodiscard]] std::set<std::array<int, 3>> gemm_shapes() const {
    std::lock_guard lock(shapes_->mutex);
    return shapes_->run;
  }
  /// GEMM calls of shape (m, n, k) its devices ran so far.
  [[nodiscard]] int gemm_calls(const std::array<int, 3>& shape) const {
    std::lock_guard lock(shapes_->mutex);
    const auto it = shapes_->calls.find(shape);
    return it == shapes_->calls.end() ? 0 : it->second;
  }
  /// Unvectorized elementwise passes run on this backend's devices so far.
  [[nodiscard]] long unvectorized_calls() const { return unvectorized_->load(); }
  /// Bytes its devices copied (Device::copy: the replay's pipeline messages within one process).
  [[nodiscard]] long copied_bytes() const { return copied_->load(); }
  /// All-gathers called on this backend's communicators so far (by every member).
  [[nodiscard]] long all_gather_calls() const { return all_gathers_->load(); }
  /// All-to-alls called on this backend's communicators so far (by every member).
  [[nodiscard]] long all_to_all_calls() const { return all_to_alls_->load(); }
  /// Per communicator size: the values every member put into all-reduces, reduce-scatters and
  /// all-gathers so far (an all-reduce's count, a reduce-scatter's size · count, an all-gather's
  /// count), summed over the members.
  [[nodiscard]] std::map<int, long> reduced_by_size() const {
    std::lock_guard lock(shapes_->mutex);
    return *reduced_;
  }
  /// Per communicator size: the values every member put into all-to-alls so far (size · count
  /// each), summed over the members.
  [[nodiscard]] std::map<int, long> exchanged_by_size() const {
    std::lock_guard lock(shapes_->mutex);
    return *exchanged_;
  }

  Result<exec::Communicators> communicators(const std::vector<exec::Device*>& members) override {
    struct Counting final : ForwardingCommunicator {
      std::shared_ptr<std::atomic<long>> all_gathers;
      std::shared_ptr<std::atomic<long>> all_to_alls;
      std::shared_ptr<Shapes> shapes;  // its mutex guards `reduced`
      std::shared_ptr<std::map<int, long>> reduced;
      std::shared_ptr<std::map<int, long>> exchanged;
      void count(std::size_t n) {
        std::lock_guard lock(shapes->mutex);
        (*reduced)[c->size()] += static_cast<long>(n);
      }
      Result<std::int64_t> all_reduce(float* b, std::size_t n) override {
        count(n);
        return c->all_reduce(b, n);
      }
      Result<std::int64_t> all_gather(const float* in, float* out, std::size_t n) override {
        ++*all_gathers;
        count(n);
        return c->all_gather(in, out, n);
      }
      Result<std::int64_t> reduce_scatter(const float* in, float* out, std::size_t n) override {
        count(n * static_cast<std::size_t>(c->size()));
        return c->reduce_scatter(in, out, n);
      }
      Result<std::int64_t> all_to_all(const float* in, float* out, std::size_t n) override {
        ++*all_to_alls;
        {
          std::lock_guard lock(shapes->mutex);
          (*exchanged)[c->size()] += static_cast<long>(n * static_cast<std::size_t>(c->size()));
        }
        return c->all_to_all(in, out, n);
      }
    };
    auto inner = exec::Backend::communicators(members);
    if (!inner) return inner;
    exec::Communicators out;
    for (auto& c : *inner) {
      auto w = std::make_unique<Counting>();
      w->c = std::move(c);
      w->all_gathers = all_gathers_;
      w->all_to_alls = all_to_alls_;
      w->shapes = shapes_;
      w->reduced = reduced_;
      w->exchanged = exchanged_;
      out.push_back(std::move(w));
    }
    return out;
  }

 private:
  std::unique_ptr<exec::Backend> inner_;
  int budget_;
  int only_;
  std::shared_ptr<std::atomic<long>> unvectorized_ = std::make_shared<std::atomic<long>>(0);
  std::shared_ptr<std::atomic<long>> copied_ = std::make_shared<std::atomic<long>>(0);
  std::shared_ptr<std::map<int, long>> reduced_ = std::make_shared<std::map<int, long>>();
  std::shared_ptr<std::map<int, long>> exchanged_ = std::make_shared<std::map<int, long>>();
  std::shared_ptr<std::atomic<long>> all_gathers_ = std::make_shared<std::atomic<long>>(0);
  std::shared_ptr<std::atomic<long>> all_to_alls_ = std::make_shared<std::atomic<long>>(0);
  std::shared_ptr<Shapes> shapes_ = std::make_shared<Shapes>();
};

}  // namespace hetsim::test
