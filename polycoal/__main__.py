from polycoal.cli import main

raise SystemExit(main())
