// The print action of TCGD_TENSOR (docs/tensor.md, "Printing"): one line
// per observation of a launch that a print rule selected, written by the
// recorder as the observation arrives (the job makes no host call for it),
// to the recorder's standard error, which is the job's.
//
//   tcgd print: vectorized_elementwise_kernel<4, MulFunctor<float>, ...> #3 graph 0 replay 2
//       arg 1 float32 x1024: min -1.5 max 3 mean 0.25 std 1.1 zero 12 nan 0 inf 0/0 hash 5f3a...
//
// (one line; wrapped here). Throttled per rule: every=N prints the
// executions 0, N, 2N, ... of a captured site (its replays) and the
// invocations 0, N, 2N, ... of a kernel launched eagerly; lines=N is the
// rule's budget of lines, after which one line says the rest is in the
// bundle only. Observations often arrive before the description of their
// launch (the GPU and the host reach the recorder by different paths): they
// wait, up to kMaxWaiting of them, for it.
//
// values=N (8 by default) records the first N elements of each range
// (fingerprint_abi.h, "recording"); the line ends with them:
//
//   ... hash 5f3a... values [-1.5, 0.25, 3, 0, 0, 1, 2, 0.5, ...]
//
// A line waits for its values (they come through the record ring, which
// the recorder reads apart from the observations); one whose values never
// came (the record ring or the staging was full) says so.
//
// Memory stays bounded on long runs: every site is kept until its
// observations cannot come any more, which for an eager launch is once each
// of its ranges has had one; a captured site (one per node of a graph)
// stays, since each replay observes it again.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <tuple>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "collectors/tensor/probe_rules.h"
#include "tcgd/bundle.pb.h"

namespace tcgd::recorder {

class TensorPrinter {
 public:
  using Sink = std::function<void(std::string_view line)>;
  static constexpr size_t kMaxWaiting = 65536;

  // `rules`: TCGD_TENSOR's rules as the job parsed them (a site's rule is an
  // index into them). Prints nothing unless one of them is a print rule.
  TensorPrinter(std::vector<collectors::tensor::ProbeRule> rules, Sink sink);

  bool active() const { return active_; }

  void kernel(uint64_t function, std::string_view mangled_name, bool probe = false);
  void site(const bundle::TensorSite& site);
  // Rows [from, end) of `batch` (just drained).
  void observations(const bundle::TensorObservationBatch& batch, int from);
  // Recorded pieces [from, end) of `batch` (just drained): a print rule's
  // values are the piece at offset 0 of its observation.
  void payloads(const bundle::TensorPayloadBatch& batch, int from);
  // Observations still waiting for a site that never came.
  uint64_t lost() const { return lost_; }
  // Sites kept (an eager one until all its ranges came).
  size_t sitesKept() const { return sites_.size(); }
  void finish();

 private:
  struct Row {
    uint64_t site = 0;
    uint32_t exec = 0, range = 0, dtype = 0, flags = 0;
    uint64_t elements = 0, hash = 0, nan = 0, pos_inf = 0, neg_inf = 0, zero = 0;
    double minimum = 0, maximum = 0, sum = 0, sum_squares = 0;
  };
  struct Site {
    bool print = false;  // its rule prints (else its observations are passed over)
    uint32_t rule = 0;
    uint64_t function = 0;
    uint64_t invocation = 0;
    uint32_t capture = 0;  // capture ordinal + 1; 0 eager
    std::vector<int32_t> params;  // each range's parameter (-1: a copy's or set's destination)
    std::string shape;            // an explicit probe's: "[2, 4]" ("" for kernels)
    size_t unseen = 0;            // eager: ranges whose observation has not come yet
  };
  struct RuleState {
    bool print = false;
    uint64_t every = 1;
    uint64_t lines = 0;
    uint64_t values = 0;  // values=N
    uint64_t printed = 0;
    bool told = false;  // the budget's end was said
  };

  using Key = std::tuple<uint64_t, uint32_t, uint32_t>;  // site, exec, range
  struct Values {
    std::string data;
    uint32_t dtype = 0;
    bool dropped = false;  // the staging had no room
    uint64_t range_bytes = 0;
  };
  struct Deferred {  // a line decided on, waiting for its values
    Site site;
    Row row;
  };

  void print(const Site& site, const Row& row);
  void emit(const Site& site, const Row& row, const std::string& values);
  // Prints `row` of the site `at` if its rule prints, and forgets an eager
  // site once all its ranges came.
  void take(std::unordered_map<uint64_t, Site>::iterator at, const Row& row);

  bool active_ = false;
  std::vector<RuleState> rules_;
  Sink sink_;
  std::unordered_map<uint64_t, std::string> names_;  // function -> short name
  std::unordered_map<uint64_t, Site> sites_;  // eager ones until all their ranges came
  std::unordered_map<uint64_t, std::vector<Row>> waiting_;
  size_t waiting_count_ = 0;
  uint64_t lost_ = 0;
  std::map<Key, Values> values_;      // values come before their line
  std::map<Key, Deferred> deferred_;  // lines waiting for their values
};

// " values [a, b, ...]" for the recorded first elements `data` of a range
// of `dtype` (", ..." when the range holds more than `data`).
std::string valuesText(std::string_view data, uint32_t dtype, uint64_t range_bytes);

// The line for one observation (no newline): what TensorPrinter writes.
// `shape`: an explicit probe's ("[2, 4]"), said instead of the argument and
// the element count; "" for launches, copies and sets.
std::string printLine(std::string_view kernel, uint64_t invocation, uint32_t capture, uint32_t exec,
                      int32_t param, std::string_view shape, uint32_t dtype, uint32_t flags, uint64_t elements, uint64_t hash,
                      uint64_t nan, uint64_t pos_inf, uint64_t neg_inf, uint64_t zero, double minimum,
                      double maximum, double sum, double sum_squares);

}  // namespace tcgd::recorder
