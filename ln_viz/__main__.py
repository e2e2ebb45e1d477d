import sys

from ln_viz.cli import main

sys.exit(main(prog="python -m ln_viz"))
