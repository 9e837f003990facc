from mrc.cli import main

raise SystemExit(main())
