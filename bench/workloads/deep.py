# The deep real program of `make bench` (issue 14's budgets): Debian's
# black (apt-get install black), a pure-Python code formatter, formatting
# standard library modules in memory. Its visitors and parser recurse, so
# samples carry deep Python and native stacks, unlike cpu.py's fixed depth.
# Runs only under Debian's /usr/bin/python3 (black is installed for it).
#
#   python3 deep.py [--wait|--serve] UNITS   one unit formats one module
#
# Same protocol and output as cpu.py ("ready PID", "elapsed S cpu S").
# Nothing is written to disk: black.format_str, no cache, no workers.
import os
import sys

import black

from cpu import drive

# Modules of 3.11's standard library: ~0.1-0.9 s each, formatted in turn.
MODULES = ("textwrap", "difflib", "string", "shlex", "fractions", "calendar",
           "tokenize", "pprint", "argparse", "dataclasses")
STDLIB = os.path.dirname(os.__file__)


def load():
    out = []
    for name in MODULES:
        with open(os.path.join(STDLIB, name + ".py"), encoding="utf-8") as f:
            out.append(f.read())
    return out


SOURCES = load()
MODE = black.Mode()


def work(units):
    n = 0
    for i in range(units):
        n += len(black.format_str(SOURCES[i % len(SOURCES)], mode=MODE))
    return n


if __name__ == "__main__":
    drive(work, sys.argv[1:])
