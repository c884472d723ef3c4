// A simulated GPU job for the tensor analyses' tests: float32 buffers in a
// caching allocator that hands addresses out again, eager launches that run
// at once, stream captures whose launches run only when the graph is
// replayed (with the scalars baked in at capture and the buffers read at
// replay), copies, sets, points, and a writer of the .tcgd-tensor bundle the
// agent and tcgd-recorder would write for it: graph records, the probes'
// capture records, kernels with their parameter layout, sites with their
// ranges and pointer words, raw parameter blobs, and an observation of every
// range after every launch and every replay (fingerprints computed as
// collectors/tensor/fingerprint_abi.h defines them), written by the real
// BundleWriter.
//
// Planted bugs are built with it the way they happen in PyTorch programs:
// a static input nothing copies into, a Python float passed to a captured
// kernel, a branch taken at capture time, a buffer the graph never
// initializes, random numbers.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "tcgd/bundle.pb.h"

namespace tcgd::analyze::testing {

using Values = std::vector<float>;

class TensorSim {
 public:
  // `seed` seeds the random-number kernels of eager launches; replays draw
  // from a stream of their own (as graph-safe generators do), so eager and
  // replayed random numbers differ while two eager runs agree.
  explicit TensorSim(std::string run_name, uint32_t seed = 1);

  // ---- memory ------------------------------------------------------------
  // A buffer of `elements` float32, its content `garbage` (what freed memory
  // or a fresh graph pool holds). Freed buffers go back to a per-size free
  // list and the next alloc of that size gets the latest freed address, as
  // PyTorch's caching allocator does.
  uint32_t alloc(uint32_t elements, float garbage = 0.0f);
  void free(uint32_t buffer);
  const Values& values(uint32_t buffer) const { return buffers_[buffer].data; }
  uint64_t address(uint32_t buffer) const { return buffers_[buffer].address; }

  // ---- work (eager, or captured while a capture is open) -----------------
  using Kernel = std::function<void(const std::vector<const Values*>& in, const std::vector<Values*>& out,
                                    const std::vector<double>& scalars, std::mt19937& rng)>;
  // A kernel launch: `name` is the mangled name the driver would report;
  // its parameters are one pointer word per input, then per output (an
  // output may also be read: in place), then one 8-byte double per scalar.
  void launch(const std::string& name, const std::vector<uint32_t>& inputs, const std::vector<uint32_t>& outputs,
              const std::vector<double>& scalars, Kernel kernel);
  // A kernel of a library call that also uses the library's workspace
  // (cuBLAS's), which the agent leaves out of fingerprints: a parameter word
  // after the pointers holds the workspace's address and names no range
  // (TensorSite.workspace_words 1), and `kernel` gets the workspace as its
  // last input and its last output. One workspace, as one stream's cuBLAS
  // handle has.
  void libraryLaunch(const std::string& name, const std::vector<uint32_t>& inputs,
                     const std::vector<uint32_t>& outputs, const std::vector<double>& scalars, Kernel kernel);
  // cudaMemcpyAsync host to device (`values` become the buffer's content),
  // device to device, and cudaMemsetAsync (D32) to `value`.
  void copyIn(uint32_t buffer, const Values& values);
  void copy(uint32_t destination, uint32_t source);
  void fill(uint32_t buffer, float value);

  // ---- graphs --------------------------------------------------------------
  void beginCapture();
  void endCapture();  // and instantiate
  void replay(uint32_t capture = kLatest);
  static constexpr uint32_t kLatest = UINT32_MAX;

  void point(const std::string& name);

  // The agent's reuse=on: a captured kernel's input that an earlier node of
  // the same capture fingerprinted, with nothing captured between touching
  // it, is not fingerprinted again; its range names that node's
  // (TensorRange.reuse_site). Applies to launches captured from then on.
  void reuseKnownInputs(bool on) { reuse_ = on; }

  // ---- the bundle ----------------------------------------------------------
  struct WriteOptions {
    bool trailer = true;
    // Cut the file inside the frame holding this share of the launches
    // (0: no cut): a job killed mid-run.
    double torn_at = 0;
    // Observation rows per frame.
    size_t rows_per_frame = 4096;
    // Chronological chunks the frames come in.
    size_t chunks = 12;
  };
  // Writes `path` (which must not exist); ASSERTs on failure.
  void write(const std::string& path, const WriteOptions& options) const;
  void write(const std::string& path) const { write(path, WriteOptions{}); }

  // Counts, for tests.
  size_t sites() const { return sites_.size(); }
  size_t observations() const { return observations_.size(); }

 private:
  struct Buffer {
    uint64_t address = 0;
    uint32_t elements = 0;
    Values data;
    bool live = true;
  };
  struct Site {
    uint64_t id = 0;
    uint64_t sequence = 0;
    uint32_t kind = 1;  // 1 kernel, 3 copy, 4 set
    uint64_t function = 0;
    uint64_t invocation = 0;
    uint64_t stream = 0;
    uint32_t capture = 0;  // ordinal + 1
    uint32_t node = 0;
    std::vector<uint32_t> buffers;  // one range each, in parameter order
    std::vector<int32_t> params;    // parameter index of each range (-1: destination)
    uint32_t inputs = 0;            // kernels: the first `inputs` buffers are inputs
    std::vector<double> scalars;
    uint64_t params_blob = 0;
    uint32_t params_bytes = 0;
    uint64_t copy_bytes = 0, copy_source = 0;
    uint32_t copy_kind = 0;
    Kernel kernel;           // kernels
    bool workspace = false;  // kernels: libraryLaunch
    uint32_t source = 0;     // copies: the source buffer
    Values payload;          // copies in: the bytes; sets: one value
    bool from_host = false;
    // Per range (empty: none reused): the site id and range it is reused
    // from; a site id of 0 where the range is fingerprinted here.
    std::vector<std::pair<uint64_t, uint32_t>> reused;
  };
  struct Observation {
    uint64_t site;
    uint32_t exec;
    uint32_t range;
    uint64_t elements, hash, nan, pos_inf, neg_inf, zero;
    double minimum, maximum, sum, sum_squares;
    int64_t first_nonfinite;
  };
  struct Record {
    uint16_t type;
    uint8_t cls;
    uint64_t sequence;
    uint64_t words[5];
  };
  struct Capture {
    std::vector<uint64_t> sites;  // indices into sites_
    uint64_t graph = 0, exec = 0;
    uint32_t replays = 0;
  };

  struct Mark {
    size_t observations;  // observations after the launch or replay
    uint64_t sequence;    // the next record sequence then
  };

  uint64_t nextSequence() { return sequence_++; }
  void writeSite(const Site& site, bundle::TensorSite* out) const;
  uint64_t kernelHandle(const std::string& name, uint32_t kind);
  uint64_t paramsBlob(const std::string& bytes);
  void addSite(Site site);
  void addLaunch(const std::string& name, const std::vector<uint32_t>& inputs, const std::vector<uint32_t>& outputs,
                 const std::vector<double>& scalars, Kernel kernel, bool workspace);
  void findReuses(Site& site) const;
  void run(const Site& site, uint32_t exec);
  void observe(const Site& site, uint32_t exec);
  void record(uint16_t type, uint8_t cls, uint64_t w0 = 0, uint64_t w1 = 0, uint64_t w2 = 0, uint64_t w3 = 0,
              uint64_t w4 = 0);

  std::string run_name_;
  std::mt19937 rng_;
  std::mt19937 graph_rng_;
  std::vector<Buffer> buffers_;
  Values workspace_ = Values(64, 0.0f);  // libraryLaunch's workspace
  static constexpr uint64_t kWorkspaceAddress = 0x7e0000000000ull;
  std::map<uint32_t, std::vector<uint64_t>> free_lists_;  // elements -> freed addresses, latest last
  uint64_t next_address_ = 0x7f0000000000ull;
  std::vector<Site> sites_;
  std::vector<Observation> observations_;
  std::vector<Record> records_;
  std::vector<std::pair<uint64_t, std::string>> points_;  // sequence, name
  std::map<std::string, uint64_t> kernels_;               // name -> handle
  std::vector<std::pair<uint64_t, std::string>> kernel_list_;  // handle, name, in first-use order
  std::map<uint64_t, uint32_t> kernel_params_;            // handle -> parameter count (layout)
  std::map<std::string, uint64_t> blobs_;                 // params bytes -> blob id
  std::vector<std::string> blob_list_;
  std::map<std::string, uint64_t> invocations_;
  std::vector<Capture> captures_;
  bool capturing_ = false;
  bool reuse_ = false;
  uint64_t sequence_ = 1;
  // After each eager launch and each replay, for writing in time order.
  std::vector<Mark> marks_;
};

}  // namespace tcgd::analyze::testing
