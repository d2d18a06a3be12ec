import sys

from gpufleet_cli import main

sys.exit(main())
