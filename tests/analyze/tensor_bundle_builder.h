// Builds real .tcgd-tensor bundles for tests with the real writer and
// encoder (proto/), in the order tcgd-recorder writes them
// (tools/recorder/tensor_output.cpp), under the schemas the agent registers
// (interpose/hooks.def and agent/channel/record_types.def, expanded here).
//
// A test says what the job did, in order:
//
//   TensorBundleBuilder b;
//   const uint64_t relu = b.kernel(0x7f10, "_ZN2at6native4reluEv");
//   const uint64_t eager = b.eagerLaunch(relu, {b.range(0x1000, 4096)});
//   b.observe(eager, 0, 0, ObservationStats::of({1.f, 0.f, 2.f}));
//   b.captureBegin();
//   const uint64_t node = b.capturedLaunch(relu, {b.range(0x2000, 4096)});
//   const uint64_t exec = b.instantiate(b.captureEnd());
//   for (int step = 0; step < 3; ++step) {
//     const uint32_t replay = b.replay(exec);
//     b.observe(node, replay, 0, ObservationStats::of({1.f, 0.f, 2.f}));
//   }
//   b.point("after-replays");
//   b.write(path);
//
// A captured range the agent did not fingerprint (reuse=on) names the node
// whose observation it takes: b.range(0x2000, 4096).reusedFrom(node, 0).
//
// Each call adds the records the agent emits that the recorder keeps in a
// tensor bundle (kernel_name and tensor_kernel, tensor_site,
// cuStreamBeginCapture_v2 and tensor_capture_begin, cuStreamEndCapture and
// tensor_capture_end, cuGraphInstantiateWithFlags, cuGraphLaunch or
// cudaGraphLaunch, point; kernel launch and copy records go to the memory
// bundle only) and the frames the recorder makes of them (TensorKernel,
// TensorSite, TensorObservation rows, Point, TensorCounters after each
// point and a final one). Nothing is checked: a test may observe a site that does not exist,
// a range it does not have or an exec outside its replays, to see that the
// analyzer says so; WriteOptions spoils the file itself (a short column,
// counters that lie, a tear in the middle of a frame).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "channel/record.h"
#include "tcgd/bundle.pb.h"

namespace tcgd::analyze::testing {

// tensor::Dtype values (collectors/tensor/fingerprint_abi.h).
inline constexpr uint32_t kDtypeFloat32 = 1;
inline constexpr uint32_t kDtypeFloat16 = 2;
inline constexpr uint32_t kDtypeInt64 = 9;
// TensorKernel.family.
inline constexpr uint32_t kFamilyKernel = 1, kFamilyFunction = 2, kFamilyPseudo = 3, kFamilyProbe = 4;
// The stream launches and captures use unless told otherwise.
inline constexpr uint64_t kTensorStream = 0x5100;

// The figures of one observation (TensorObservationBatch's columns).
struct ObservationStats {
  uint32_t dtype = kDtypeFloat32;
  uint32_t flags = 0;  // 1 hash only, 2 incomplete
  uint64_t elements = 0;
  uint64_t hash = 0;
  uint64_t nan = 0, pos_inf = 0, neg_inf = 0, zero = 0;
  double minimum = 0, maximum = 0, sum = 0, sum_squares = 0;
  int64_t first_nonfinite = -1;
  uint32_t chunks_missing = 0;

  // The statistics of float32 values as the fingerprint kernel computes
  // them (min and max over finite values, +inf and -inf when there are
  // none), with a hash of their bytes: FNV-1a, not the GPU's hash, but
  // equal bytes give equal hashes and different bytes different ones.
  static ObservationStats of(const std::vector<float>& values);
  // No statistics (the range's dtype is unknown): the hash only.
  static ObservationStats hashOnly(uint64_t hash);
  // These figures with chunks missing (dropped, or the job died mid-kernel).
  ObservationStats incomplete(uint32_t missing = 1) const;
};

// One range a site observes (TensorRange).
struct RangeSpec {
  uint64_t ptr = 0;
  uint64_t bytes = 0;
  uint32_t dtype = kDtypeFloat32;
  int32_t param = 0;    // the parameter holding the pointer; -1: a copy's or set's destination
  uint64_t extent = 0;  // 0: `bytes`
  uint64_t base = 0;    // 0: `ptr`
  uint32_t source = 1;  // 1 allocator block, 2 driver allocation, 3 copy or set destination, 4 explicit probe
  // An explicit probe's tensor: its shape and strides (TensorRange.shape).
  std::optional<std::vector<int64_t>> shape;
  std::vector<int64_t> strides;
  // Not fingerprinted at this site: in every replay its observation is that
  // of range `reuse_range` of site `reuse_site`, an earlier node of the same
  // capture (TensorRange.reuse_site; 0: fingerprinted here). Nothing is
  // checked; observe() nothing for such a range.
  uint64_t reuse_site = 0;
  uint32_t reuse_range = 0;

  // This range, reused from range `range` of site `site`.
  RangeSpec reusedFrom(uint64_t site, uint32_t range) const {
    RangeSpec r = *this;
    r.reuse_site = site;
    r.reuse_range = range;
    return r;
  }
};

// What a launch has besides its kernel and ranges.
struct LaunchSpec {
  std::optional<uint64_t> stream;  // default kTensorStream (captured: the capture's stream)
  uint32_t grid[3] = {128, 1, 1};
  uint32_t block[3] = {256, 1, 1};
  uint32_t shared_mem = 0;
  uint32_t status = 0;  // TensorSite.status: 0 fingerprinted
  uint32_t rule = 0;
  uint32_t replay_first = 0, replay_last = UINT32_MAX;  // captured sites' window
  uint32_t ranges_dropped = 0;
  std::string params;  // raw parameter bytes (interned, kind 7); empty: none
};

struct WrittenTensorBundle {
  struct Frame {
    uint64_t offset = 0;
    uint64_t size = 0;
    std::string type;  // "header", "events", "tensor_sites", ... (dump --frames' names)
  };
  std::string path;
  std::vector<Frame> frames;  // as written (before any tear)
  uint64_t size = 0;          // of the file on disk
};

class TensorBundleBuilder {
 public:
  TensorBundleBuilder();

  // The header's run name, and a rank of a run group (-1: none).
  TensorBundleBuilder& run(const std::string& name, int32_t rank = -1);

  // A kernel as first probed: its kernel_name and tensor_kernel records and
  // its TensorKernel frame. `name` is the driver's (mangled). Returns
  // `function`.
  uint64_t kernel(uint64_t function, const std::string& name, uint32_t family = kFamilyKernel,
                  uint32_t dtype = kDtypeFloat32);
  // The range of `bytes` at `ptr` (a kernel's parameter `param`).
  static RangeSpec range(uint64_t ptr, uint64_t bytes, uint32_t dtype = kDtypeFloat32, int32_t param = 0);

  // A probed eager launch of `function`: its cuLaunchKernel and tensor_site
  // records and its TensorSite. Returns the site id (1, 2, ... in order).
  uint64_t eagerLaunch(uint64_t function, std::vector<RangeSpec> ranges, const LaunchSpec& launch = {});
  // An eager copy of `bytes` to `dst` (a pseudo kernel "memcpy HtoD" unless
  // `function` names another): kind copy, its destination the one range.
  uint64_t eagerCopy(uint64_t dst, uint64_t bytes, uint64_t src, uint32_t copy_kind = 1);

  // An explicit probe (tcgd_probe) of the pseudo kernel `function` (declared
  // with kernel(function, NAME, kFamilyProbe)): kind 5, one range of `shape`
  // (row-major strides) at `ptr`, no pointer words. Eager, or a node of the
  // open capture when one is open.
  uint64_t probe(uint64_t function, uint64_t ptr, const std::vector<int64_t>& shape, uint32_t dtype = kDtypeFloat32);

  // A stream capture begins on `stream`: cuStreamBeginCapture_v2 and
  // tensor_capture_begin. Returns its number (TensorSite.capture: the
  // process's capture ordinal + 1).
  uint32_t captureBegin(uint64_t stream = kTensorStream);
  // A launch made while the open capture runs: a node of its graph.
  uint64_t capturedLaunch(uint64_t function, std::vector<RangeSpec> ranges, const LaunchSpec& launch = {});
  // The open capture ends: cuStreamEndCapture and tensor_capture_end.
  // Returns the graph (0 when `result` is not 0: a failed capture).
  uint64_t captureEnd(uint32_t result = 0);
  // cuGraphInstantiateWithFlags of `graph`. Returns the exec.
  uint64_t instantiate(uint64_t graph);
  // A graph launch of `exec` (cudaGraphLaunch with `runtime`). Returns the
  // replay index its capture's observations carry: the successful launches
  // of execs of that capture before it (docs/tensor.md: execs of one
  // capture share their probes). A failed launch (result not 0) returns the
  // index the next successful one will have.
  uint32_t replay(uint64_t exec, bool runtime = false, uint32_t result = 0);

  // One observation of range `range` of `site` in execution `exec` (0 for
  // an eager site; a replay index for a captured one).
  void observe(uint64_t site, uint32_t exec, uint32_t range, const ObservationStats& stats);
  // The bytes a record rule kept of that observation: one TensorPayload
  // (offset 0, `data` whole) in a TensorPayloadBatch frame of its own, as
  // tcgd-recorder writes them. `range_bytes`: the range's size (0: the data's);
  // `limit`: the bytes the rule records at most (0: the data's).
  void record(uint64_t site, uint32_t exec, uint32_t range, const std::string& data,
              uint32_t dtype = kDtypeFloat32, uint64_t range_bytes = 0, uint64_t limit = 0);
  // Little-endian bytes of float32 values, for record().
  static std::string floats(std::initializer_list<float> values);

  // A point: its record, its Point frame and the TensorCounters frame the
  // recorder writes after it. Returns its ordinal.
  uint64_t point(const std::string& name, const std::string& origin = "explicit");

  // What the counters say beyond what was built: launches not probed, by
  // reason (TensorCounters.skipped), and partials the GPU dropped.
  void skip(const std::string& reason, uint64_t count = 1);
  void slotsDropped(uint64_t count);
  void endReason(const std::string& reason);

  struct Tear {
    std::string frame_type = "tensor_observations";  // WrittenTensorBundle::Frame::type
    int nth = -1;  // which frame of that type: 0 the first, -1 the last
  };
  struct WriteOptions {
    bool trailer = true;         // a trailer (complete unless slots were dropped or observations are incomplete)
    bool final_counters = true;  // the final TensorCounters frame before it
    // The file ends in the middle of this frame (half of it written).
    std::optional<Tear> tear;
    // Spoilers for validate's checks: the final counters count this many
    // more sites than were built; the first observation batch's `exec`
    // column loses its last entry.
    int64_t final_sites_error = 0;
    bool short_exec_column = false;
    size_t observations_per_batch = 4096;  // rows per TensorObservationBatch
  };
  WrittenTensorBundle write(const std::string& path) const { return write(path, WriteOptions{}); }
  WrittenTensorBundle write(const std::string& path, const WriteOptions& options) const;

  size_t records() const { return records_.size(); }
  size_t sites() const { return sites_.size(); }
  size_t observations() const { return observation_count_; }

 private:
  struct RecordItem {
    channel::Record record;
  };
  struct KernelItem {
    bundle::TensorKernel kernel;
  };
  struct SiteItem {
    size_t index;  // into sites_
  };
  struct ObservationItem {
    uint64_t site;
    uint32_t exec, range;
    ObservationStats stats;
  };
  struct PointItem {
    bundle::Point point;
  };
  struct PayloadItem {
    bundle::TensorPayload payload;
  };
  struct CounterItem {  // skip() and slotsDropped(): counted from there on
    std::string reason;  // empty: slots dropped
    uint64_t count;
  };
  using Item = std::variant<RecordItem, KernelItem, SiteItem, ObservationItem, PointItem, CounterItem, PayloadItem>;

  // A record of `type`, its class the agent's; returns its sequence.
  uint64_t addRecord(uint16_t type, std::initializer_list<uint64_t> words, uint8_t flags = 0);
  uint64_t addString(const std::string& text);
  uint64_t launch(uint64_t function, std::vector<RangeSpec> ranges, const LaunchSpec& spec, uint32_t kind,
                  bool captured);

  std::vector<Item> items_;
  std::vector<channel::Record> records_;  // sequence = index
  std::vector<bundle::TensorSite> sites_;
  struct Blob {
    uint64_t id;
    uint32_t kind;  // channel::BlobKind
    std::string data;
  };
  std::vector<Blob> blobs_;
  uint64_t next_blob_ = 1;  // site blobs take ids too but are not written (the recorder drops them)
  size_t observation_count_ = 0;
  uint64_t payloads_ = 0;
  std::map<uint64_t, uint64_t> invocations_;  // function -> launches so far
  std::map<uint64_t, uint32_t> kernel_families_;
  // The open capture, and what captures, graphs and execs there were.
  struct Capture {
    uint32_t number = 0;
    uint64_t stream = 0;
    uint64_t capture_id = 0;
    uint64_t graph = 0;
    uint32_t nodes = 0;
    uint32_t sites = 0;
    uint32_t launches = 0;  // successful graph launches of its execs
  };
  std::vector<Capture> captures_;
  std::optional<size_t> open_capture_;
  std::map<uint64_t, size_t> graph_capture_;  // graph -> capture
  std::map<uint64_t, size_t> exec_capture_;   // exec -> capture
  uint64_t next_graph_ = 0x6000, next_exec_ = 0xe000;
  std::string run_name_ = "tensor-test";
  int32_t rank_ = -1;
  std::string end_reason_ = "normal exit";
  uint64_t points_ = 0;
};

}  // namespace tcgd::analyze::testing
