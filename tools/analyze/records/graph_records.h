// The words of the graph records, read in one place: the capture,
// instantiate, launch and destroy calls (interpose/hooks.def 320..343,
// 512..513), kernel launches (360..379), kernel names and the graph
// inventory taken at each capture's end (collectors/record_types.h,
// docs/graphs.md).
#pragma once

#include <array>
#include <cstdint>

#include "event_codec.h"
#include "records/record_catalog.h"

namespace tcgd::analyze {

// A capture, instantiate, graph launch or destroy call. By kind:
//   kCaptureBegin  stream, graph (cuStreamBeginCaptureToGraph), result | mode
//   kCaptureEnd    stream, graph (0 when it failed), result
//   kInstantiate   exec, graph, result; WithParams: stream (the upload stream)
//   kGraphLaunch   exec, -, result, -, stream
//   kExecDestroy   exec, -, result (a release: 0, recorded before the call)
//   kGraphDestroy  graph, -, result (likewise)
// Fields a kind does not have are 0.
struct GraphCallRecord {
  uint64_t stream = 0;
  uint64_t graph = 0;
  uint64_t exec = 0;
  uint32_t result = 0;
  static GraphCallRecord of(RecordKind kind, const proto::DecodedRecord& r) {
    GraphCallRecord call;
    call.result = static_cast<uint32_t>(r.words[2]);
    switch (kind) {
      case RecordKind::kCaptureBegin:
      case RecordKind::kCaptureEnd:
        call.stream = r.words[0];
        call.graph = r.words[1];
        break;
      case RecordKind::kInstantiate:
        call.exec = r.words[0];
        call.graph = r.words[1];
        call.stream = r.words[3];
        break;
      case RecordKind::kGraphLaunch:
        call.exec = r.words[0];
        call.stream = r.words[4];
        break;
      case RecordKind::kExecDestroy:
        call.exec = r.words[0];
        break;
      case RecordKind::kGraphDestroy:
        call.graph = r.words[0];
        break;
      default:
        break;
    }
    return call;
  }
};

// A kernel launch (cuLaunchKernel*): function, grid, result | shared memory,
// block | capture status, stream.
struct KernelLaunchRecord {
  uint64_t function = 0;
  std::array<uint32_t, 3> grid{};
  std::array<uint32_t, 3> block{};
  uint32_t result = 0;
  uint32_t shared_mem = 0;
  uint8_t capture = 0;  // the stream's capture status at the launch (w::captureStatus)
  uint64_t stream = 0;
  static KernelLaunchRecord of(const proto::DecodedRecord& r) {
    const auto bits = [](uint64_t word, unsigned shift, unsigned width) {
      return static_cast<uint32_t>((word >> shift) & ((uint64_t{1} << width) - 1));
    };
    KernelLaunchRecord k;
    k.function = r.words[0];
    k.grid = {bits(r.words[1], 0, 32), bits(r.words[1], 32, 16), bits(r.words[1], 48, 16)};
    k.result = bits(r.words[2], 0, 32);
    k.shared_mem = bits(r.words[2], 32, 32);
    k.block = {bits(r.words[3], 0, 16), bits(r.words[3], 16, 16), bits(r.words[3], 32, 16)};
    k.capture = static_cast<uint8_t>(bits(r.words[3], 48, 8));
    k.stream = r.words[4];
    return k;
  }
};

// kernel_name: a launch handle's name, once per handle.
struct KernelNameRecord {
  uint64_t function = 0;
  uint64_t name_blob = 0;  // 0 when unknown
  uint8_t family = 0;      // KernelFamily
  static KernelNameRecord of(const proto::DecodedRecord& r) {
    return {r.words[0], r.words[1], static_cast<uint8_t>(r.words[2])};
  }
};

// The graph inventory records of one graph: its kernel and memory nodes
// first, the summary (graph_inventory) after them, graph_node_types last.
struct GraphInventoryRecord {
  uint64_t graph = 0;
  uint64_t stream = 0;  // the capture's
  uint32_t nodes = 0;     // all the graph has
  uint16_t examined = 0;  // at most the agent's cap
  bool truncated = false;
  uint8_t status = 0;  // GraphInventoryStatus (0 ok)
  // kernel, memcpy, memset, host; child_graph, empty, mem_alloc, mem_free
  std::array<uint16_t, 4> main_a{};
  std::array<uint16_t, 4> main_b{};
  static GraphInventoryRecord of(const proto::DecodedRecord& r) {
    GraphInventoryRecord g;
    g.graph = r.words[0];
    g.stream = r.words[1];
    g.nodes = static_cast<uint32_t>(r.words[2]);
    g.examined = static_cast<uint16_t>(r.words[2] >> 32);
    g.truncated = static_cast<uint8_t>(r.words[2] >> 48) != 0;
    g.status = static_cast<uint8_t>(r.words[2] >> 56);
    for (unsigned k = 0; k < 4; ++k) {
      g.main_a[k] = static_cast<uint16_t>(r.words[3] >> (16 * k));
      g.main_b[k] = static_cast<uint16_t>(r.words[4] >> (16 * k));
    }
    return g;
  }
};

struct GraphKernelNodeRecord {
  uint64_t graph = 0;
  uint16_t kernel_index = 0;  // counts kernel nodes only
  uint16_t node_index = 0;    // the cuGraphGetNodes position
  uint32_t shared_mem = 0;
  uint64_t function = 0;      // named by a kernel_name record
  std::array<uint32_t, 3> grid{};
  std::array<uint32_t, 3> block{};
  bool from_kern = false;  // the handle is the node's CUkernel
  static GraphKernelNodeRecord of(const proto::DecodedRecord& r) {
    GraphKernelNodeRecord n;
    n.graph = r.words[0];
    n.kernel_index = static_cast<uint16_t>(r.words[1]);
    n.node_index = static_cast<uint16_t>(r.words[1] >> 16);
    n.shared_mem = static_cast<uint32_t>(r.words[1] >> 32);
    n.function = r.words[2];
    n.grid = {static_cast<uint32_t>(r.words[3]), static_cast<uint16_t>(r.words[3] >> 32),
              static_cast<uint16_t>(r.words[3] >> 48)};
    n.block = {static_cast<uint16_t>(r.words[4]), static_cast<uint16_t>(r.words[4] >> 16),
               static_cast<uint16_t>(r.words[4] >> 32)};
    n.from_kern = (r.flags & 1) != 0;
    return n;
  }
};

struct GraphMemNodeRecord {
  uint64_t graph = 0;
  uint32_t node_index = 0;
  bool alloc = false;  // GraphMemNodeKind 1; else a free
  uint64_t ptr = 0;
  uint64_t size = 0;   // allocs only
  int32_t device = -1;
  static GraphMemNodeRecord of(const proto::DecodedRecord& r) {
    return {r.words[0], static_cast<uint32_t>(r.words[1]),
            static_cast<uint8_t>(r.words[1] >> 32) == 1, r.words[2], r.words[3],
            static_cast<int32_t>(static_cast<uint32_t>(r.words[4]))};
  }
};

// graph_node_types: every node type's count, u16 each in CUgraphNodeType
// order (CUDA 13.0; the last one counts the types added later), four per
// word from word 1.
inline constexpr size_t kGraphNodeTypes = 15;
struct GraphNodeTypesRecord {
  uint64_t graph = 0;
  std::array<uint16_t, kGraphNodeTypes> counts{};
  static GraphNodeTypesRecord of(const proto::DecodedRecord& r) {
    GraphNodeTypesRecord t;
    t.graph = r.words[0];
    for (size_t k = 0; k < kGraphNodeTypes; ++k)
      t.counts[k] = static_cast<uint16_t>(r.words[1 + k / 4] >> (16 * (k % 4)));
    return t;
  }
};

}  // namespace tcgd::analyze
