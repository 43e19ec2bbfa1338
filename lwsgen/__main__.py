import sys

from lwsgen.cli import main

sys.exit(main(sys.argv[1:]))
