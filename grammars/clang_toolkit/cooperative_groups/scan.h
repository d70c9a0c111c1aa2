// polycoal: <cooperative_groups/scan.h> is declared with <cooperative_groups.h>
#pragma once
#include "../cooperative_groups.h"
