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
};

[[maybe_unused]] const bool kRegistered = [] {
  agent::registerRecordTypes(kCollectorTypes, std::size(kCollectorTypes));
  return true;
}();

}  // namespace
}  // namespace tcgd::collectors
