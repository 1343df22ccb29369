import sys

from kvgen._cli.main import main

sys.exit(main())
