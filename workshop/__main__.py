import sys

from workshop.cli.main import main

sys.exit(main())
