import os
import sys

try:
    from .runtime.daemon import main
except KeyboardInterrupt:  # a Ctrl-C while importing: one line, as the CLI answers it later
    sys.stderr.write("interrupted: codeagent stopped while starting; nothing was changed\n")
    sys.stderr.flush()
    os._exit(130)

main()
