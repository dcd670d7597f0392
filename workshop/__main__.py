import sys

from workshop.cli import main

sys.exit(main())
