"""``python -m tb_iotrace``: the ``tb-iotrace`` command line."""
import sys

from tb_iotrace.cli import main

sys.exit(main())
