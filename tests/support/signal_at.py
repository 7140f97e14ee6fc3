"""Run a Python script as its command line does, sending this process a real signal (SIGKILL, SIGTERM...) just
before the Nth audit event of one name (os.rename, os.remove, open...) whose first argument contains a text: a
deterministic kill or interrupt at a real point of the real code, without strace or a hook in the script.

usage: python tests/support/signal_at.py SIGNAL EVENT N TEXT SCRIPT [ARGS...]
"""

import os
import runpy
import signal
import sys

signum, event, nth, text = signal.Signals[sys.argv[1]], sys.argv[2], int(sys.argv[3]), sys.argv[4]
del sys.argv[:5]
sys.path[0] = os.path.dirname(os.path.abspath(sys.argv[0]))  # as `python SCRIPT` has it
seen = 0


def hook(name, args):
    global seen
    if name == event and text in os.fsdecode(args[0] if isinstance(args[0], (str, bytes)) else ""):
        seen += 1
        if seen == nth:
            os.kill(os.getpid(), signum)


sys.addaudithook(hook)
runpy.run_path(sys.argv[0], run_name="__main__")
