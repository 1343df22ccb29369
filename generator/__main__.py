import sys

from kvgen._cli import main

sys.exit(main())
