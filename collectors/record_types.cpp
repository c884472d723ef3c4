// Registers the record types of collectors/ with the schema registry.
#include "collectors/record_types.h"

#include <iterator>

#include "schema.h"

namespace tcgd::collectors {
namespace {

using channel::RecordClass;

const agent::RecordTypeInfo kCollectorTypes[] = {
    {kRecordKernelName, RecordClass::kKernelLaunch, "kernel_name",
     {"function:hex", "name:blob", "family:u8", "", ""}, nullptr},
    {kRecordReleaseFailed, RecordClass::kDriverOther, "release_failed",
     {"ptr:hex", "release_type:u16", "result:u32", "", ""}, nullptr},
    {kRecordPointDeviceMemory, RecordClass::kDriverOther, "point_device_memory",
     {"ordinal:u64", "free:u64", "total:u64", "result:u32,device:i32", ""}, nullptr},
    {kRecordGraphInventory, RecordClass::kDriverGraph, "graph_inventory",
     {"graph:hex", "stream:hex", "nodes:u32,examined:u16,truncated:u8,status:u8",
      "kernel:u16,memcpy:u16,memset:u16,host:u16", "child_graph:u16,empty:u16,mem_alloc:u16,mem_free:u16"},
     nullptr},
    {kRecordGraphKernelNode, RecordClass::kDriverGraph, "graph_kernel_node",
     {"graph:hex", "kernel_index:u16,node_index:u16,shared_mem:u32", "function:hex",
      "grid_x:u32,grid_y:u16,grid_z:u16", "block_x:u16,block_y:u16,block_z:u16,result:u16"},
     "kern:bool"},
    {kRecordGraphMemNode, RecordClass::kDriverGraph, "graph_mem_node",
     {"graph:hex", "node_index:u32,kind:u8", "ptr:hex", "size:u64", "device:i32,result:u32"},
     nullptr},
    {kRecordGraphNodeTypes, RecordClass::kDriverGraph, "graph_node_types",
     {"graph:hex", "kernel:u16,memcpy:u16,memset:u16,host:u16",
      "child_graph:u16,empty:u16,wait_event:u16,event_record:u16",
      "ext_semas_signal:u16,ext_semas_wait:u16,mem_alloc:u16,mem_free:u16",
      "batch_mem_op:u16,conditional:u16,other:u16"},
     nullptr},
    {kRecordPointOtherProcesses, RecordClass::kDriverOther, "point_other_processes",
     {"ordinal:u64", "device:i32", "bytes:u64", "processes:u32,process_flags:u32",
      "status:u32,nvml_result:u32"},
     nullptr},
    {kRecordNativeStack, RecordClass::kDriverOther, "native_stack",
     {"stack:blob", "alloc_type:u16,frames:u8,status:u8,truncated:u8", "object:hex", "hash:hex",
      ""},
     nullptr},
    {kRecordTensorSite, RecordClass::kTensor, "tensor_site",
     {"data:blob", "site:u64", "function:hex", "invocation:u64", "stream:hex"}, "kind:u8"},
    {kRecordTensorKernel, RecordClass::kTensor, "tensor_kernel",
     {"function:hex", "name:blob", "layout:blob", "params:u16,dtype:u8,family:u8,rules:u32",
      "param_status:u32"},
     nullptr},
    {kRecordTensorStatus, RecordClass::kTensor, "tensor_status",
     {"status:u32", "detail:blob", "device:i32", "device_bytes:u64", "slots:u64"}, nullptr},
    {kRecordTensorCaptureBegin, RecordClass::kTensor, "tensor_capture_begin",
     {"ordinal:u64", "capture_id:u64", "stream:hex", "", ""}, nullptr},
    {kRecordTensorCaptureEnd, RecordClass::kTensor, "tensor_capture_end",
     {"ordinal:u64", "capture_id:u64", "graph:hex", "launches:u64", "sites:u64"}, nullptr},
};

[[maybe_unused]] const bool kRegistered = [] {
  agent::registerRecordTypes(kCollectorTypes, std::size(kCollectorTypes));
  return true;
}();

}  // namespace
}  // namespace tcgd::collectors
