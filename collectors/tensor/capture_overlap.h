// Captured fingerprint nodes beside the stream (docs/tensor.md, "Overlap in
// captures").
//
// Enqueued on a capturing stream, a fingerprint launch F becomes a node that
// every later node of the stream waits for: in each replay the GPU runs the
// job's kernel K, then F, then the next kernel K', one after another, and
// F's whole latency (a few microseconds even for a small range) adds to the
// replay. Nothing needs K' to wait for F unless K' writes what F reads. So a
// captured F is hung beside the stream instead: it depends on K (with
// chain=off, the default, on K alone: it uses no scratch region and a
// stream's fingerprint nodes run side by side; with chain=on also on the
// stream's previous fingerprint node: they form one chain and share one
// scratch region), and the stream's dependencies are
// set back to what they were before F, so K' depends on K alone and runs
// while F reads. F is then *pending* on the stream, with what it reads, and
// so are the fingerprint nodes before it that nothing has waited for yet, up
// to the rule's overlap depth (the chain is a lane of fingerprints beside
// the job's kernels). The next piece of work captured there decides:
//   - a probed launch or copy whose ranges (every pointer word of its
//     parameters, each to the end of its allocation, from the allocation's
//     start; known inputs, which it only reads, left out) overlap no pending
//     node's ranges runs beside all of them;
//   - one that overlaps a pending node's ranges gets an edge from each such
//     node that no other such node waits for (cuGraphAddDependencies on the
//     graph being captured into, which CUDA allows during a capture): it
//     waits for them and for every node they wait for through the chain
//     (with chain=on: every older one), which are then no longer pending;
//   - one whose parameters were not all scanned, a kernel that may write
//     through more than its parameter words (one tcgd does not know to
//     write only through them: cuDNN's, CUTLASS's, NCCL's, which may write
//     through a pointer or a TMA descriptor held in device memory;
//     known_inputs.h), and any other work tcgd sees on the stream (a launch
//     that is not probed, a graph launched into the capture) gets an edge
//     from the newest pending node: it waits for them all, as it would have
//     in the stream's order;
//   - when more nodes are pending than the depth allows, the oldest joins
//     the stream: the next work waits for it;
//   - an event recorded on the stream would not carry the pending nodes to
//     the streams that wait for it: the newest is added to the stream's
//     dependencies and the event is recorded again.
// A fingerprint node nothing waits for at the end of a capture is a sink of
// the graph: a replay is complete only when it has run.
//
// What this cannot see: a kernel tcgd takes to write through its parameter
// words only that writes elsewhere all the same, and work that reaches the
// stream without a hook tcgd has (a 2D copy, a host function): such a
// writer after K may change what F reads before F runs.
// overlap=off in the rule keeps F on the stream; overlap-depth=1 lets F run
// beside one kernel only.
//
// Batches (batch=N in the rule). A node per site pays a node's own cost
// (its launch, its dependencies: a few microseconds each, whatever it reads)
// hundreds of times a replay, and most of its launches are too small to
// fill the device. With batch=N the fingerprint ranges of up to N
// consecutive probed sites of a stream are gathered instead, launched by
// nothing, and added as one node when they must run: the node depends on the
// newest of those sites' work, so it reads what each of them left as long as
// nothing captured after a site wrote its ranges; and it is added before
// anything could:
//   - work captured on the stream that may write what the batch reads (the
//     rules above, taken for the batch as for a pending node) makes the
//     batch a node, after the work before it, and the work waits for it;
//   - any other work tcgd sees on the stream (above), an event recorded on
//     it, and the capture's end make it a node too (which the work, the
//     event, the graph's publish node then wait for, as for pending nodes);
//   - a batch of N sites, or one that could not take the next site's ranges
//     (PendingFingerprint::kMaxRanges at most), becomes a node at once.
// A batch node is then a pending node like any other (depth, joins), side
// by side with the others (no chain); its ranges leave partials for the
// graph's publish node, each range's slot carrying its own site
// (FingerprintRange::site_delta), the same observations a node per site
// gives. A site whose ranges do not fit one batch node, and launches that
// publish their own (replays= windows, record and print rules, the partials
// arena used up), are launched as before.
//
// Widening (widen=on in the rule). A node beside the stream shares the
// device with the job's kernels, and the fewer blocks it takes the less it
// slows them: it launches with at most besideBlocks (a block on half the
// SMs), its blocks taking its chunks in turn. A node that work comes to wait for (a join on what it
// reads, or on work that may write anything) holds that work up for as long
// as it runs: its grid is set to every block its chunks can use (the
// device's limit, TensorDevice's max_grid) before the join, which CUDA
// allows while the graph is being captured (cuGraphKernelNodeSetParams).
// With chunks=256 a range of a few MiB has up to four times the blocks of
// the default chunking to give such a node.
//
// Capture-time only: eager launches never come here, and a replay runs the
// nodes with no host call. The pending fingerprints of each stream are kept
// per capturing thread (in its Scratch); work on one capturing stream from
// two threads is not followed.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "collectors/tensor/capture_table.h"
#include "collectors/tensor/fingerprint_abi.h"
#include "interpose/cuda_api.h"

namespace tcgd::proto {
struct SiteBlobRange;
}

namespace tcgd::collectors::tensor::detail {

// A byte range [begin, end) of device memory.
struct Span {
  uint64_t begin = 0;
  uint64_t end = 0;
};

// A fingerprint node pending on a capturing stream: what it reads.
struct PendingFingerprint {
  static constexpr uint32_t kMaxRanges = 64;
  CUgraphNode node = nullptr;  // the site's last fingerprint launch
  CUgraphNode prior = nullptr;  // the node it waits for (chain=on), or nullptr
  uint64_t site = 0;  // its site (a batch node's first), for TensorSite.waited_site
  bool widen = false;  // widen=on: given every block when work waits for it
  bool any = false;  // its ranges are too many to keep: any work waits for it
  bool reads_workspaces = false;  // its rule said workspaces=on
  uint32_t range_count = 0;
  Span ranges[kMaxRanges];
};

// A stream's batch (batch=N, "Batches" above): the ranges of its sites not
// yet in a node, laid out as one fingerprint launch takes them.
struct PendingBatch {
  static constexpr uint32_t kMaxAfter = 16;
  CUgraph graph = nullptr;           // the graph being captured into
  CUgraphNode after[kMaxAfter] = {};  // the newest site's work: the node depends on it
  uint32_t after_count = 0;
  uint32_t sites = 0;                // 0: empty
  uint32_t max_sites = 1;            // the rule's batch=
  uint32_t depth = 2;                // the rule's overlap-depth
  bool widen = false;                // the rule's widen
  uint32_t chunks = 0;               // sum of the ranges' chunks
  uint32_t range_count = 0;
  uint64_t first_site = 0;           // FingerprintParams::site of the node
  CaptureTable::Capture capture;     // where its partials are noted
  PendingFingerprint reads;          // what it reads (node unset), for the joins
  ::tcgd::tensor::FingerprintRange ranges[PendingFingerprint::kMaxRanges];
};

// The pending fingerprint nodes of one capturing stream, oldest first (a
// ring of kSlots: at most kMaxDepth pending, and one more for a batch made a
// node right before everything pending joins): with chain=on each depends
// on the one before it was added after (its `prior`); with chain=off on its
// own work alone. And its batch.
// widen=on: the most blocks a node beside the stream launches with, from
// the device's most a launch takes (TensorDevice's max_grid, four blocks an
// SM): a block on half the SMs, 66 on an H100 (about what a range of the
// default chunking, 64 chunks at most below 128 MiB, has).
inline constexpr uint32_t besideBlocks(uint32_t max_grid) { return max_grid / 8 > 1 ? max_grid / 8 : 1; }

struct PendingStream {
  static constexpr uint32_t kMaxDepth = 16;
  static constexpr uint32_t kSlots = kMaxDepth + 1;
  uint64_t capture_id = 0;  // 0: a free entry
  CUstream stream = nullptr;  // as the driver takes it
  uint32_t first = 0;  // the oldest node's place in `nodes`
  uint32_t count = 0;
  PendingFingerprint nodes[kSlots];
  PendingBatch batch;
  PendingFingerprint& at(uint32_t i) { return nodes[(first + i) % kSlots]; }
  PendingFingerprint& newest() { return at(count - 1); }
};

// The pending fingerprints of one capturing thread. Its owner uses it under
// PendingLock; another thread that captures into the same capture next
// takes what it left (overlapTakeOver) under tryLockPending.
struct PendingTable {
  static constexpr uint32_t kStreams = 8;
  uint32_t used = 0;  // entries with a capture id, for the one-load check
  std::atomic<uint32_t> busy{0};
  PendingStream entries[kStreams];
};

// The owner's hold on its table: uncontended unless another thread is
// taking what it left over, which takes microseconds.
class PendingLock {
 public:
  explicit PendingLock(PendingTable& table) : table_(table) {
    while (table_.busy.exchange(1, std::memory_order_acquire) != 0) {
    }
  }
  ~PendingLock() { table_.busy.store(0, std::memory_order_release); }
  PendingLock(const PendingLock&) = delete;
  PendingLock& operator=(const PendingLock&) = delete;

 private:
  PendingTable& table_;
};
inline bool tryLockPending(PendingTable& table) { return table.busy.exchange(1, std::memory_order_acquire) == 0; }
inline void unlockPending(PendingTable& table) { table.busy.store(0, std::memory_order_release); }

// What a piece of captured work may write: its ranges, each from its
// allocation's start to its end, and a library call's declared outputs
// (`also`: [start, end) pairs, whole allocations: a kernel may reach them
// through a pointer held in device memory rather than a parameter word). `complete`: every
// pointer word was looked at (no argument left out by the rule, none
// dropped for lack of room) and the work writes through nothing else
// (known_inputs.h: a kernel whose writes are seen); otherwise it may write
// anything.
struct WriteSet {
  const proto::SiteBlobRange* ranges = nullptr;
  uint32_t range_count = 0;
  const uint64_t* also = nullptr;
  uint32_t also_count = 0;
  bool complete = false;
  bool touches_workspaces = false;  // words inside a library's workspace were left out of its ranges
};

// Before the fingerprint launches of a captured site: `stream` as the driver
// takes it, the work just captured there (its write set). Joins the pending
// fingerprints it may write to and chains the new one after the newest
// (above). False: this site's fingerprint stays on the stream (a driver call
// failed).
struct OverlapPlan {
  static constexpr uint32_t kMaxDeps = 16;
  CUgraph graph = nullptr;
  CUgraphNode deps[kMaxDeps] = {};  // the stream's dependencies before the fingerprint
  uint32_t dep_count = 0;
  CUgraphNode prior = nullptr;  // the newest pending fingerprint, which the new one depends on
  // What the work waits for (TensorSite.waits, proto/tensor_site_blob.h:
  // kWaits*), and the newest site whose node it waits for (0: none).
  uint32_t waits = 0;
  uint64_t waited_site = 0;
};
// OverlapPlan::waits and overlapEnd's result: TensorSite.waits's bits.
inline constexpr uint32_t kWaitsWritten = 1;
inline constexpr uint32_t kWaitsUnseen = 2;
inline constexpr uint32_t kWaitsNewest = 4;
inline constexpr uint32_t kWaitsDepth = 8;
// `chain`: the new fingerprint comes after the stream's newest pending one
// (they share the stream's scratch region); false: it depends on the work
// alone, and fingerprints of one stream run side by side (each writes its
// own partials or slots: site_probe.cpp gives it no scratch region).
bool overlapBegin(PendingTable& table, CUstream stream, uint64_t capture_id, const WriteSet& work, bool chain,
                  OverlapPlan* plan);

// After them: sets the stream's dependencies back and keeps the new node
// (of site `site`) pending with the ranges it reads (`reads`, `read_count`:
// ptr and bytes of each), at most `depth` nodes of the stream pending (1 to
// kMaxDepth). `launched`: at least one fingerprint launch was captured.
// `widen`: the rule's widen=on (Widening above). kWaitsDepth when the next
// work waits for the oldest pending node, else 0.
uint32_t overlapEnd(PendingTable& table, CUstream stream, uint64_t capture_id, const OverlapPlan& plan,
                    bool launched, uint64_t site, const proto::SiteBlobRange* reads, uint32_t read_count,
                    bool reads_workspaces, uint32_t depth, bool widen);

// A captured site's ranges (`ranges`, `range_count` of them, laid out as
// for a launch of their own) into the stream's batch instead of a launch
// ("Batches" above), after overlapBegin gave `plan`: `site` its id,
// `max_sites` the rule's batch=, `depth` its overlap-depth, `capture` its
// capture (for the partials), `reads_workspaces` its workspaces=. A batch
// that cannot take them becomes a node first; one that is full with them
// becomes a node now. False: they are not taken (no room to follow the
// stream, more ranges than a batch keeps): the site launches its own.
struct BatchSite {
  uint64_t site = 0;
  const ::tcgd::tensor::FingerprintRange* ranges = nullptr;
  uint32_t range_count = 0;
  uint32_t max_sites = 1;
  uint32_t depth = 2;
  bool reads_workspaces = false;
  bool widen = false;
  CaptureTable::Capture capture;
};
bool overlapDefer(PendingTable& table, CUstream stream, uint64_t capture_id, const OverlapPlan& plan,
                  const BatchSite& site);

// A capture into `graph` is ending: this thread's batches of it become
// nodes (sinks of the graph, before its publish node is added).
void overlapCaptureEnding(PendingTable& table, CUgraph graph);

// Adds `batch` to its graph as one fingerprint node after its `after` nodes
// (collectors/tensor/site_probe.cpp): its partials taken and noted, or, the
// arena used up, slots of its own. nullptr when it could not be added.
CUgraphNode addBatchNode(const PendingBatch& batch);

// Work tcgd saw captured on `stream` that does not run beside pending
// fingerprints (see above): an edge from the newest to the work just
// captured.
void overlapJoin(PendingTable& table, CUstream stream);

// An event was recorded on `stream` (`with_flags`: by cuEventRecordWithFlags,
// `flags`): a pending fingerprint joins the stream and the event is recorded
// again, so whatever waits for the event waits for the fingerprints too.
void overlapEventRecorded(PendingTable& table, CUevent event, CUstream stream, bool with_flags,
                          unsigned flags);

// Work just captured on `stream` by a thread other than the one that
// captured before it: the pending nodes and batches that thread left in
// `previous` for the same capture become the new work's to wait for (edges
// from them to it), since that thread will not see the work: PyTorch's
// autograd engine captures a step's backward from a thread of its own, into
// the forward's capture, and the forward's nodes must read what the forward
// left before the backward writes it. The caller holds `previous`
// (tryLockPending).
void overlapTakeOver(PendingTable& previous, CUstream stream);

// Forgets the entries of `capture_id` (its capture ended).
void overlapForget(PendingTable& table, uint64_t capture_id);

}  // namespace tcgd::collectors::tensor::detail
