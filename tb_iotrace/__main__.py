"""``python -m tb_iotrace``: the ``tb-iotrace`` command line."""
import sys

from .cli import main

sys.exit(main())
