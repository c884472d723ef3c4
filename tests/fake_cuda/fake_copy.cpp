// The fake driver's copies and sets, on host memory. Stream-ordered ones run
// at once, or become memcpy/memset nodes on a capturing stream (replays copy
// what the source holds then, as a graph's memcpy node does). Device-side
// pointers must be memory the device can address (fake::deviceAccessible),
// else CUDA_ERROR_INVALID_VALUE; host-side ones only non-null. The
// synchronous forms are "potentially unsafe" during a capture (see
// fake_stream.cpp): CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED under the capture
// modes' rules, CUDA_ERROR_STREAM_CAPTURE_IMPLICIT for the legacy stream
// while a blocking stream captures; either invalidates the captures
// concerned, and nothing is copied.
#include <cstring>
#include <type_traits>

#include "fake_cuda.h"
#include "fake_state.h"

namespace fake {
namespace {

enum class Sides { kUnified, kDeviceToDevice, kHostToDevice, kDeviceToHost };

// One macro serves host pointers and device addresses alike.
template <class T>
CUdeviceptr address(T value) {
  if constexpr (std::is_pointer_v<T>) {
    return reinterpret_cast<CUdeviceptr>(value);
  } else {
    return value;
  }
}

void copyOrSetNow(const NodeSpec& node) {
  if (node.bytes == 0) return;
  auto* dst = reinterpret_cast<unsigned char*>(node.dptr);
  if (node.type == CU_GRAPH_NODE_TYPE_MEMCPY) {
    std::memmove(dst, reinterpret_cast<const void*>(node.src), node.bytes);
    return;
  }
  switch (node.element_size) {
    case 1: std::memset(dst, static_cast<int>(node.value & 0xff), node.bytes); break;
    case 2: {
      const auto v = static_cast<uint16_t>(node.value);
      for (size_t i = 0; i < node.bytes; i += 2) std::memcpy(dst + i, &v, 2);
      break;
    }
    default:
      for (size_t i = 0; i < node.bytes; i += 4) std::memcpy(dst + i, &node.value, 4);
      break;
  }
}

NodeSpec copyNode(CUdeviceptr dst, CUdeviceptr src, size_t bytes, Sides sides) {
  NodeSpec node;
  node.type = CU_GRAPH_NODE_TYPE_MEMCPY;
  node.dptr = dst;
  node.src = src;
  node.bytes = bytes;
  node.dst_device = sides == Sides::kDeviceToDevice || sides == Sides::kHostToDevice;
  node.src_device = sides == Sides::kDeviceToDevice || sides == Sides::kDeviceToHost;
  if (sides == Sides::kUnified) {
    // Unified addressing: a side that starts in device-addressable memory is
    // device memory (and must then hold the whole range); the rest is host
    // memory, pageable or not.
    node.dst_device = dst != 0 && deviceAccessible(dst, 1);
    node.src_device = src != 0 && deviceAccessible(src, 1);
  }
  return node;
}

NodeSpec setNode(CUdeviceptr dst, uint32_t value, size_t count, uint32_t element_size) {
  NodeSpec node;
  node.type = CU_GRAPH_NODE_TYPE_MEMSET;
  node.dptr = dst;
  node.bytes = count * element_size;
  node.value = value;
  node.element_size = element_size;
  node.dst_device = true;
  return node;
}

// The pointer checks every copy and set makes before it runs or is captured.
CUresult checkOperands(const NodeSpec& node) {
  if (node.type == CU_GRAPH_NODE_TYPE_MEMSET && node.dptr % node.element_size != 0) {
    return CUDA_ERROR_INVALID_VALUE;  // documented: D16 two-, D32 four-byte aligned
  }
  if (node.bytes == 0) return CUDA_SUCCESS;
  if (node.dptr == 0) return CUDA_ERROR_INVALID_VALUE;
  if (node.type == CU_GRAPH_NODE_TYPE_MEMCPY && node.src == 0) return CUDA_ERROR_INVALID_VALUE;
  if (node.dst_device && !deviceAccessible(node.dptr, node.bytes)) return CUDA_ERROR_INVALID_VALUE;
  if (node.src_device && !deviceAccessible(node.src, node.bytes)) return CUDA_ERROR_INVALID_VALUE;
  return CUDA_SUCCESS;
}

CUresult enqueue(const NodeSpec& node, CUstream stream, bool per_thread_entry) {
  if (!validStream(stream)) return CUDA_ERROR_INVALID_HANDLE;
  if (const CUresult result = checkOperands(node); result != CUDA_SUCCESS) return result;
  switch (captureNode(stream, per_thread_entry, node)) {
    case Captured::kYes: return CUDA_SUCCESS;
    case Captured::kInvalidated: return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    case Captured::kNo: break;
  }
  copyOrSetNow(node);
  return CUDA_SUCCESS;
}

CUresult synchronous(const NodeSpec& node, bool per_thread_entry) {
  if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (const CUresult result = checkUnsafeCall(); result != CUDA_SUCCESS) return result;
  if (const CUresult result = checkDefaultStreamUse(per_thread_entry); result != CUDA_SUCCESS) {
    return result;
  }
  if (const CUresult result = checkOperands(node); result != CUDA_SUCCESS) return result;
  copyOrSetNow(node);
  return CUDA_SUCCESS;
}

}  // namespace

CUresult runCopyOrSet(const NodeSpec& node) {
  if (node.bytes > 0 && ((node.dst_device && !deviceAccessible(node.dptr, node.bytes)) ||
                         (node.src_device && !deviceAccessible(node.src, node.bytes)))) {
    return CUDA_ERROR_ILLEGAL_ADDRESS;
  }
  copyOrSetNow(node);
  return CUDA_SUCCESS;
}

}  // namespace fake

using fake::address;
using fake::copyNode;
using fake::setNode;
using fake::Sides;

// ---- stream-ordered copies --------------------------------------------------

#define FAKE_COPY_ASYNC(elf, per_thread, DstType, SrcType, sides)                            \
  FAKE_EXPORT CUresult elf(DstType dst, SrcType src, size_t ByteCount, CUstream hStream) {  \
    FAKE_ENTER(elf);                                                                        \
    FAKE_RETURN(elf, fake::enqueue(copyNode(address(dst), address(src), ByteCount, sides),  \
                                   hStream, per_thread));                                   \
  }
FAKE_COPY_ASYNC(cuMemcpyAsync, false, CUdeviceptr, CUdeviceptr, Sides::kUnified)
FAKE_COPY_ASYNC(cuMemcpyAsync_ptsz, true, CUdeviceptr, CUdeviceptr, Sides::kUnified)
FAKE_COPY_ASYNC(cuMemcpyDtoDAsync_v2, false, CUdeviceptr, CUdeviceptr, Sides::kDeviceToDevice)
FAKE_COPY_ASYNC(cuMemcpyDtoDAsync_v2_ptsz, true, CUdeviceptr, CUdeviceptr, Sides::kDeviceToDevice)
FAKE_COPY_ASYNC(cuMemcpyHtoDAsync_v2, false, CUdeviceptr, const void*, Sides::kHostToDevice)
FAKE_COPY_ASYNC(cuMemcpyHtoDAsync_v2_ptsz, true, CUdeviceptr, const void*, Sides::kHostToDevice)
FAKE_COPY_ASYNC(cuMemcpyDtoHAsync_v2, false, void*, CUdeviceptr, Sides::kDeviceToHost)
FAKE_COPY_ASYNC(cuMemcpyDtoHAsync_v2_ptsz, true, void*, CUdeviceptr, Sides::kDeviceToHost)

// ---- stream-ordered sets ------------------------------------------------------

#define FAKE_SET_ASYNC(elf, per_thread, ValueType, element_size)                               \
  FAKE_EXPORT CUresult elf(CUdeviceptr dstDevice, ValueType value, size_t N, CUstream hStream) { \
    FAKE_ENTER(elf);                                                                           \
    FAKE_RETURN(elf, fake::enqueue(setNode(dstDevice, value, N, element_size), hStream,        \
                                   per_thread));                                               \
  }
FAKE_SET_ASYNC(cuMemsetD8Async, false, unsigned char, 1)
FAKE_SET_ASYNC(cuMemsetD8Async_ptsz, true, unsigned char, 1)
FAKE_SET_ASYNC(cuMemsetD16Async, false, unsigned short, 2)
FAKE_SET_ASYNC(cuMemsetD16Async_ptsz, true, unsigned short, 2)
FAKE_SET_ASYNC(cuMemsetD32Async, false, unsigned int, 4)
FAKE_SET_ASYNC(cuMemsetD32Async_ptsz, true, unsigned int, 4)

// ---- synchronous copies and sets ------------------------------------------------

#define FAKE_COPY_SYNC(elf, per_thread, DstType, SrcType, sides)                                 \
  FAKE_EXPORT CUresult elf(DstType dst, SrcType src, size_t ByteCount) {                        \
    FAKE_ENTER(elf);                                                                            \
    FAKE_RETURN(elf, fake::synchronous(copyNode(address(dst), address(src), ByteCount, sides),  \
                                       per_thread));                                            \
  }
FAKE_COPY_SYNC(cuMemcpyHtoD_v2, false, CUdeviceptr, const void*, Sides::kHostToDevice)
FAKE_COPY_SYNC(cuMemcpyHtoD_v2_ptds, true, CUdeviceptr, const void*, Sides::kHostToDevice)
FAKE_COPY_SYNC(cuMemcpyDtoH_v2, false, void*, CUdeviceptr, Sides::kDeviceToHost)
FAKE_COPY_SYNC(cuMemcpyDtoH_v2_ptds, true, void*, CUdeviceptr, Sides::kDeviceToHost)

#define FAKE_SET_SYNC(elf, per_thread, ValueType, element_size)                              \
  FAKE_EXPORT CUresult elf(CUdeviceptr dstDevice, ValueType value, size_t N) {              \
    FAKE_ENTER(elf);                                                                        \
    FAKE_RETURN(elf, fake::synchronous(setNode(dstDevice, value, N, element_size),          \
                                       per_thread));                                        \
  }
FAKE_SET_SYNC(cuMemsetD8_v2, false, unsigned char, 1)
FAKE_SET_SYNC(cuMemsetD8_v2_ptds, true, unsigned char, 1)
FAKE_SET_SYNC(cuMemsetD32_v2, false, unsigned int, 4)
FAKE_SET_SYNC(cuMemsetD32_v2_ptds, true, unsigned int, 4)
