#pragma once
// Test helper: a communicator that passes every call to the wrapped one `c`; a test's wrapper
// overrides only the calls it counts or logs.

#include <cstddef>
#include <cstdint>
#include <memory>

#include "exec/backend.hpp"

namespace hetsim::test {

struct ForwardingCommunicator : exec::Communicator {
  std::unique_ptr<exec::Communicator> c;
  int rank() const override { return c->rank(); }
  int size() const override { return c->size(); }
  Result<std::int64_t> all_reduce(float* b, std::size_t n) override { return c->all_reduce(b, n); }
  Result<std::int64_t> all_gather(const float* in, float* out, std::size_t n) override { return c->all_gather(in, out, n); }
  Result<std::int64_t> reduce_scatter(const float* in, float* out, std::size_t n) override {
    return c->reduce_scatter(in, out, n);
  }
  Result<std::int64_t> all_to_all(const float* in, float* out, std::size_t n) override { return c->all_to_all(in, out, n); }
  Result<std::int64_t> send(const float* b, std::size_t n, int peer, int tag) override { return c->send(b, n, peer, tag); }
  Result<std::int64_t> recv(float* b, std::size_t n, int peer, int tag) override { return c->recv(b, n, peer, tag); }
  Diagnostics barrier() override { return c->barrier(); }
  void leave() override { c->leave(); }
};

}  // namespace hetsim::test
