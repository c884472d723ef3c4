// The speed benchmark of the tensor comparison (docs/performance.md, "Tensor
// analysis"): writes an eager bundle and a graph bundle of N observations
// each (default 10 M) the way tcgd-recorder writes them, then loads,
// aligns and compares them in this process on one thread and prints how
// long each phase took.
//
//   tcgd_tensor_bench DIR [--observations N] [--keep] [--reuse]
//
// --reuse compares the bundles DIR already holds (written by an earlier
// run with --keep) instead of writing them: the figure then does not
// include the page cache's writeback of what was just written.
//
// The program: a step of 200 kernels, each reading 4 ranges that earlier
// kernels of the step wrote and writing one (so the dataflow has real
// chains); the eager run does 2 warm-up iterations and the steps, at
// addresses the allocator hands out again each iteration; the graph run
// does the warm-up eagerly, captures one step and replays it, copying the
// batch into its static input before each replay. One kernel's output
// differs in a late replay, so the walk goes to the end before it finds it.
#include <unistd.h>

#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bundle_writer.h"
#include "channel/record.h"
#include "event_codec.h"
#include "tensor/analysis.h"
#include "tensor/tensor_load.h"

namespace {

using namespace tcgd;

constexpr uint32_t kKernels = 200;  // launches per step
constexpr uint32_t kReads = 4;      // ranges a kernel reads
constexpr uint32_t kRanges = kReads + 1;
constexpr uint32_t kWarmup = 2;
constexpr uint64_t kElements = 65536;  // float32: 256 KiB, one chunk
constexpr uint16_t kSiteType = 1300, kProbeBegin = 1303, kProbeEnd = 1304, kLaunchType = 340, kInstantiate = 332;

uint64_t mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  return x ^ (x >> 33);
}

struct Writer {
  proto::BundleWriter bundle;
  bundle::Frame sites, observations;
  proto::EventBatchEncoder events;
  uint64_t sequence = 1, site_id = 1;
  bool failed = false;

  void put(bundle::Frame& frame) {
    if (!bundle.write(frame).isOk()) failed = true;
    frame.Clear();
  }
  void record(uint16_t type, uint64_t w0 = 0, uint64_t w1 = 0, uint64_t w2 = 0, uint64_t w3 = 0, uint64_t w4 = 0) {
    const channel::Record r{type, 8, 0, 1, 1'000'000 + sequence * 100, {w0, w1, w2, w3, w4}};
    if (!events.add(sequence++, r)) failed = true;
  }
  void flush() {
    if (sites.tensor_sites().sites_size() > 0) put(sites);
    if (observations.tensor_observations().site_size() > 0) put(observations);
    if (!events.empty()) {
      bundle::Frame f;
      events.finish(f.mutable_events());
      put(f);
    }
  }
};

// The value of kernel k's output in iteration `it` (both runs agree on it
// unless planted).
uint64_t outputHash(uint64_t it, uint32_t k) { return mix(it * kKernels + k + 1); }

void observe(Writer& w, uint64_t site, uint32_t exec, uint32_t range, uint64_t hash) {
  bundle::TensorObservationBatch* b = w.observations.mutable_tensor_observations();
  b->add_site(site);
  b->add_exec(exec);
  b->add_range(range);
  b->add_dtype(1);
  b->add_flags(0);
  b->add_elements(kElements);
  b->add_hash(hash);
  b->add_nan(0);
  b->add_pos_inf(0);
  b->add_neg_inf(0);
  b->add_zero(hash % 17);
  b->add_minimum(-static_cast<double>(hash % 1000) / 100);
  b->add_maximum(static_cast<double>(hash % 997) / 100);
  b->add_sum(static_cast<double>(hash % 100003) / 7);
  b->add_sum_squares(static_cast<double>(hash % 1000003) / 3);
  b->add_first_nonfinite(-1);
  b->add_gpu_sequence(0);
  b->add_chunks_missing(0);
}

// The range r of kernel k: inputs are the outputs of the kernels before it
// (of the previous iteration for the first ones), the last range its own.
uint32_t producer(uint32_t k, uint32_t r) { return (k + kKernels - 1 - r * 7 % kKernels) % kKernels; }

void addSite(Writer& w, uint64_t function, uint32_t capture, uint32_t node, uint64_t base, uint32_t k, uint64_t invocation) {
  bundle::TensorSite* s = w.sites.mutable_tensor_sites()->add_sites();
  s->set_site(w.site_id);
  s->set_sequence(w.sequence);
  s->set_kind(1);
  s->set_function(function);
  s->set_invocation(invocation);
  s->set_stream(capture == 0 ? 0x1000 : 0x2000);
  s->set_capture(capture);
  s->set_node(node);
  s->set_params_blob(k + 1);
  s->set_params_bytes(kRanges * 8);
  for (uint32_t r = 0; r < kRanges; ++r) {
    const uint32_t owner = r < kReads ? producer(k, r) : k;
    bundle::TensorRange* range = s->add_ranges();
    range->set_index(r);
    range->set_param(static_cast<int32_t>(r));
    range->set_offset(r * 8);
    range->set_ptr(base + owner * 0x100000ull);
    range->set_bytes(kElements * 4);
    range->set_extent(kElements * 4);
    range->set_base(base + owner * 0x100000ull);
    range->set_dtype(1);
    range->set_source(1);
    s->add_pointer_offsets(r * 8);
    s->add_pointer_ranges(r);
  }
  w.record(kSiteType, 0, w.site_id, function, invocation, s->stream());
  ++w.site_id;
}

bool writeRun(const std::string& path, bool graph, uint64_t steps, uint64_t planted_step) {
  Writer w;
  if (!w.bundle.open(path, proto::BundleKind::kTensor).isOk()) return false;
  bundle::Frame frame;
  bundle::Header* h = frame.mutable_header();
  h->set_run_name(graph ? "graph" : "eager");
  const auto schema = [&](uint32_t id, const char* name, std::initializer_list<const char*> words) {
    bundle::RecordTypeSchema* s = h->add_record_types();
    s->set_id(id);
    s->set_name(name);
    s->set_record_class(id >= 1300 ? "tensor" : "driver_graph");
    for (const char* word : words) s->add_words(word);
  };
  schema(kSiteType, "tensor_site", {"data:blob", "site:u64", "function:hex", "invocation:u64", "stream:hex"});
  schema(kProbeBegin, "tensor_capture_begin", {"ordinal:u64", "capture_id:u64", "stream:hex"});
  schema(kProbeEnd, "tensor_capture_end", {"ordinal:u64", "capture_id:u64", "graph:hex", "launches:u64", "sites:u64"});
  schema(kInstantiate, "cuGraphInstantiateWithFlags", {"exec:hex", "graph:hex", "result:u32", "", "flags:u64"});
  schema(kLaunchType, "cuGraphLaunch", {"exec:hex", "", "result:u32", "", "stream:hex"});
  w.put(frame);
  for (uint32_t k = 0; k < kKernels; ++k) {
    bundle::TensorKernel* kernel = frame.mutable_tensor_kernel();
    kernel->set_function(0x10000 + k);
    kernel->set_name("_Z10layer_" + std::to_string(1000 + k) + "PKfPf");
    kernel->set_family(1);
    kernel->set_dtype(1);
    for (uint32_t r = 0; r < kRanges; ++r) {
      kernel->add_param_offsets(r * 8);
      kernel->add_param_sizes(8);
    }
    w.put(frame);
  }
  const uint64_t eager_base = 0x7f0000000000ull, graph_base = 0x7e0000000000ull;
  for (uint32_t k = 0; k < kKernels; ++k) {
    bundle::Blob* blob = frame.mutable_interned()->add_blobs();
    blob->set_id(k + 1);
    blob->set_kind(7);
    std::string bytes(kRanges * 8, '\0');
    for (uint32_t r = 0; r < kRanges; ++r) {
      const uint64_t address = (graph ? graph_base : eager_base) + (r < kReads ? producer(k, r) : k) * 0x100000ull;
      std::memcpy(&bytes[r * 8], &address, 8);
    }
    blob->set_data(bytes);
  }
  w.put(frame);
  uint64_t invocation = 0;
  const auto eagerIteration = [&](uint64_t it, uint64_t base) {
    for (uint32_t k = 0; k < kKernels; ++k) {
      const uint64_t site = w.site_id;
      addSite(w, 0x10000 + k, 0, 0, base, k, invocation);
      for (uint32_t r = 0; r < kRanges; ++r) {
        const uint32_t owner = r < kReads ? producer(k, r) : k;
        observe(w, site, 0, r, outputHash(owner < k || r == kReads ? it : it - 1, owner));
      }
    }
    ++invocation;
    if (w.observations.tensor_observations().site_size() >= 200000) w.flush();
  };
  const uint64_t iterations = kWarmup + steps;
  if (!graph) {
    for (uint64_t it = 0; it < iterations; ++it) eagerIteration(it, eager_base);
  } else {
    for (uint64_t it = 0; it < kWarmup; ++it) eagerIteration(it, graph_base);
    w.record(kProbeBegin, 0, 1, 0x2000);
    std::vector<uint64_t> captured;
    for (uint32_t k = 0; k < kKernels; ++k) {
      captured.push_back(w.site_id);
      addSite(w, 0x10000 + k, 1, k, graph_base, k, invocation);
    }
    ++invocation;
    w.record(kProbeEnd, 0, 1, 0x9000, kKernels, kKernels);
    w.record(kInstantiate, 0xa000, 0x9000);
    for (uint64_t replay = 0; replay < steps; ++replay) {
      const uint64_t it = kWarmup + replay;
      w.record(kLaunchType, 0xa000, 0, 0, 0, 0x1000);
      for (uint32_t k = 0; k < kKernels; ++k) {
        for (uint32_t r = 0; r < kRanges; ++r) {
          const uint32_t owner = r < kReads ? producer(k, r) : k;
          uint64_t hash = outputHash(owner < k || r == kReads ? it : it - 1, owner);
          if (replay == planted_step && owner == kKernels / 2 && r == kReads) hash ^= 1;  // the planted difference
          observe(w, captured[k], static_cast<uint32_t>(replay), r, hash);
        }
      }
      if (w.observations.tensor_observations().site_size() >= 200000) w.flush();
    }
  }
  w.flush();
  frame.mutable_trailer()->set_complete(true);
  frame.mutable_trailer()->set_end_reason("normal exit");
  w.put(frame);
  return !w.failed && w.bundle.close().isOk();
}

double seconds(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s DIR [--observations N] [--keep]\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  uint64_t observations = 10'000'000;
  bool keep = false, reuse = false;
  for (int i = 2; i < argc; ++i) {
    if (std::strcmp(argv[i], "--observations") == 0 && i + 1 < argc) observations = std::strtoull(argv[++i], nullptr, 10);
    if (std::strcmp(argv[i], "--keep") == 0) keep = true;
    if (std::strcmp(argv[i], "--reuse") == 0) reuse = keep = true;
  }
  const uint64_t per_step = uint64_t{kKernels} * kRanges;
  const uint64_t steps = observations / per_step > kWarmup ? observations / per_step - kWarmup : 1;
  const std::string eager = dir + "/bench-eager.tcgd-tensor", graph = dir + "/bench-graph.tcgd-tensor";
  auto start = std::chrono::steady_clock::now();
  if (!reuse) {
    ::unlink(eager.c_str());
    ::unlink(graph.c_str());
    if (!writeRun(eager, false, steps, steps - 10) || !writeRun(graph, true, steps, steps - 10)) {
      std::fprintf(stderr, "cannot write the bundles in %s\n", dir.c_str());
      return 2;
    }
    std::printf("wrote 2 bundles of %" PRIu64 " observations each (%" PRIu64 " steps of %u kernels x %u ranges) in %.1f s\n",
                (steps + kWarmup) * per_step, steps, kKernels, kRanges, seconds(start));
  }
  start = std::chrono::steady_clock::now();
  const tcgd::analyze::RunComparison c = tcgd::analyze::compareRuns(eager, graph, {});
  const double total = seconds(start);
  const auto& t = c.timings;
  std::printf("load %.2f s, plan %.2f s, align %.2f s, dataflow %.2f s, scan %.2f s: %.2f s in all\n", t.load_s, t.plan_s,
              t.align_s, t.dataflow_s, t.scan_s, total);
  std::printf("%" PRIu64 " observations compared, %" PRIu64 " different; first divergence: %s\n", c.scan.observations,
              c.scan.different, c.scan.first ? tcgd::analyze::causeKey(c.scan.first->cause) : "none");
  if (!keep) {
    ::unlink(eager.c_str());
    ::unlink(graph.c_str());
  }
  return c.scan.first ? 0 : 1;
}
