// Partition ids on Queen's wire: the broker names partitions by UUID, queen by bigint. The
// mapping is fixed and reversible, the same as SQL's queen.partition_uuid(bigint) and
// queen.partition_of_uuid(text): '00000000-0000-8000-8000-' || lpad(to_hex(id), 12, '0').
#pragma once
#include "core/common/firewall.h"

#include <cstdint>
#include <string>
#include <string_view>

namespace queen {

// The UUID text (36 characters, lower case) of partition id `id`; "" outside [0, 2^48) (SQL:
// NULL), where 12 hex digits cannot hold it.
std::string partition_uuid(int64_t id);
// The partition id named by a UUID text of that form (hex digits in either case); false when
// the text is not of that form.
bool partition_of_uuid(std::string_view text, int64_t* id) noexcept;

}  // namespace queen
