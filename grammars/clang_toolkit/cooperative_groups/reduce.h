// polycoal: <cooperative_groups/reduce.h> is declared with <cooperative_groups.h>
#pragma once
#include "../cooperative_groups.h"
