// Record types emitted by collectors/ (range 1280..2047, agent/channel/record.h).
// Never renumber: ids are stored in bundles.
#pragma once

#include <cstdint>

namespace tcgd::collectors {

// a0 function:hex (the launch handle), a1 name:blob (0 when unknown),
// a2 family:u8 (KernelFamily). Sent once per handle, before or just after its
// first launch record.
inline constexpr uint16_t kRecordKernelName = 1280;

// A release recorded before forwarding (pending flag) failed: a0 ptr:hex (the
// released pointer or handle, as in the release record), a1 release_type:u16
// (the release's record type), a2 result:u32. The release did not happen.
inline constexpr uint16_t kRecordReleaseFailed = 1281;

// What the driver reported for one device at a point (cuMemGetInfo_v2
// through the real table, right after the point record; one record per
// device with an active primary context, collectors/memory/point_memory.cpp):
// a0 ordinal:u64 (the point's), a1 free:u64, a2 total:u64,
// a3 "result:u32,device:i32".
inline constexpr uint16_t kRecordPointDeviceMemory = 1282;

// Graph inventory at capture end (collectors/graph/graph_inventory.h,
// docs/graphs.md). Node records of one graph come first, the summary last.
// Summary: a0 graph:hex, a1 stream:hex (the capture's),
// a2 "nodes:u32,examined:u16,truncated:u8,status:u8" (nodes: all the graph
// has; examined: at most kGraphInventoryMaxNodes; status:
// GraphInventoryStatus), a3 "kernel:u16,memcpy:u16,memset:u16,host:u16",
// a4 "child_graph:u16,empty:u16,mem_alloc:u16,mem_free:u16" (counts of examined
// nodes).
inline constexpr uint16_t kRecordGraphInventory = 1283;
// One kernel node: a0 graph:hex, a1 "kernel_index:u16,node_index:u16,
// shared_mem:u32" (kernel_index counts kernel nodes only; node_index is the
// cuGraphGetNodes position), a2 function:hex (named by a kernel_name record),
// a3 "grid_x:u32,grid_y:u16,grid_z:u16", a4 "block_x:u16,block_y:u16,
// block_z:u16,result:u16" (result of cuGraphKernelNodeGetParams). Flags
// "kern:bool": the function is the node's CUkernel, not its CUfunction.
inline constexpr uint16_t kRecordGraphKernelNode = 1284;
// One memory node: a0 graph:hex, a1 "node_index:u32,kind:u8"
// (GraphMemNodeKind: 1 alloc, 2 free), a2 ptr:hex, a3 size:u64 (alloc only),
// a4 "device:i32,result:u32" (device: the alloc's location, -1 if not a
// device or a free).
inline constexpr uint16_t kRecordGraphMemNode = 1285;
// Every node type's count (u16 each, CUgraphNodeType order): a0 graph:hex,
// a1 types 0..3, a2 types 4..7, a3 types 8..11, a4
// "batch_mem_op:u16,conditional:u16,other:u16".
inline constexpr uint16_t kRecordGraphNodeTypes = 1286;

// Device memory used by other processes at a point, from NVML (optional,
// collectors/memory/nvml_probe.h): a0 ordinal:u64, a1 device:i32, a2 bytes:u64
// (summed over the other processes NVML lists), a3 "processes:u32,process_flags:u32"
// (process_flags: kOtherProcessesSelfSeen, kOtherProcessesSizeUnknown), a4
// "status:u32,nvml_result:u32" (OtherProcessesStatus; NVML's return code).
inline constexpr uint16_t kRecordPointOtherProcesses = 1287;

// kRecordPointOtherProcesses statuses. Never renumber: stored in bundles.
enum class OtherProcessesStatus : uint32_t {
  kOk = 0,
  kNvmlUnavailable = 1,  // libnvidia-ml.so.1 absent, or nvmlInit_v2 failed
  kDeviceNotFound = 2,   // no NVML device with the CUDA device's UUID
  kNotSupported = 3,     // NVML_ERROR_NOT_SUPPORTED, or no process query entry point
  kError = 4,            // another NVML error: nvml_result says which
};
// This process was in NVML's list (and left out). Not set: it was not found
// (another PID namespace), so `bytes` may include this process.
inline constexpr uint32_t kOtherProcessesSelfSeen = 1;
// NVML did not know the usage of some process (NVML_VALUE_NOT_AVAILABLE);
// those are counted in `processes` but not in `bytes`.
inline constexpr uint32_t kOtherProcessesSizeUnknown = 2;

// The native stack of the allocation record that follows it on the same
// thread (TCGD_MEMORY_STACKS=native or all; collectors/memory/native_stacks.h,
// docs/memory-stacks.md): a0 stack:blob (a BlobKind::kStack blob, 0 when
// none), a1 "alloc_type:u16,frames:u8,status:u8,truncated:u8" (the
// allocation's record type; NativeStackStatus), a2 object:hex (the
// allocation's first word: pointer or handle, 0 when the call failed),
// a3 hash:hex (of the frames; equal hashes are equal stacks, so a record
// without a blob can still be named by another with the same hash).
inline constexpr uint16_t kRecordNativeStack = 1288;

// kRecordNativeStack statuses. Never renumber: stored in bundles.
enum class NativeStackStatus : uint8_t {
  kOk = 0,
  kTableFull = 1,    // the intern table had no room: no blob
  kPushFailed = 2,   // the payload ring was full: no blob (a later one retries)
  kBusy = 3,         // another thread was pushing this stack's blob: see the hash
  kUnavailable = 4,  // no lock-free unwinder here (glibc < 2.35)
  kEmpty = 5,        // no frame outside libtcgd.so
};

// ---- tensor probes (1300..1339; collectors/tensor, docs/tensor.md) ----
// One probed launch: a0 data:blob (BlobKind::kTensorSite, proto/
// tensor_site_blob.h), a1 site:u64, a2 function:hex, a3 invocation:u64,
// a4 stream:hex; flags kind:u8 (proto::SiteKind). The recorder turns the
// blob into a TensorSite frame of the tensor bundle.
inline constexpr uint16_t kRecordTensorSite = 1300;
// A kernel as first probed: a0 function:hex, a1 name:blob (as the driver
// names it), a2 layout:blob (BlobKind::kTensorLayout: u32 offset, u32 size
// per parameter), a3 "params:u16,dtype:u8,family:u8,rules:u32",
// a4 param_status:u32.
inline constexpr uint16_t kRecordTensorKernel = 1301;
// What the tensor probes could or could not do: a0 status:u32
// (TensorStatus), a1 detail:blob, a2 device:i32, a3 device_bytes:u64 (device
// memory tcgd took), a4 slots:u64 (observation ring capacity).
inline constexpr uint16_t kRecordTensorStatus = 1302;
// A stream capture began: a0 ordinal:u64 (the process's captures from 0),
// a1 capture_id:u64 (CUDA's), a2 stream:hex.
inline constexpr uint16_t kRecordTensorCaptureBegin = 1303;
// It ended: a0 ordinal:u64, a1 capture_id:u64, a2 graph:hex, a3 launches:u64
// (kernel launches, copies and sets captured), a4 sites:u64 (of them probed).
inline constexpr uint16_t kRecordTensorCaptureEnd = 1304;

enum class TensorStatus : uint32_t {
  kReady = 1,        // fingerprint module loaded, ring registered: probes on
  kUnavailable = 2,  // probes off for this process: detail says why
  kConfigured = 3,   // TCGD_TENSOR parsed: detail holds the rules in force
};

}  // namespace tcgd::collectors
