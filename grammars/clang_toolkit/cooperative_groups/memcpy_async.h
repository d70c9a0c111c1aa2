// polycoal: <cooperative_groups/memcpy_async.h> is declared with <cooperative_groups.h>
#pragma once
#include "../cooperative_groups.h"
