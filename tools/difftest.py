#!/usr/bin/env python3
"""polycoal's random differential tester: see polycoal/difftest and README.md.

    python tools/difftest.py --count 300 --seed 1 --jobs 2 --out /tmp/difftest
    python tools/difftest.py --count 10000 --seed 1 --jobs 16 --out /tmp/difftest-long
"""

import sys

from polycoal.difftest.main import main

if __name__ == "__main__":
    sys.exit(main())
