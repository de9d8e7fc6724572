# Sourced (after set -u) by the end-to-end tests that profile Debian's
# /usr/bin/python3.11 and read the profile with go tool pprof:
#   test_tag=NAME; . tests/py311-common.sh
# sets the defaults of the variables make check passes, skips (with the
# reason) without root, go or the interpreter, and makes $work
# (/tmp/pyperf-NAME.XXXXXX, also $HOME: go keeps its cache there) and $py.
# The caller sets its own EXIT trap.
: "${PYPERF:=./pyperf-pprof}"
: "${TOP_SRCDIR:=$(cd "$(dirname "$0")/.." && pwd)}"
: "${GO:=go}"
: "${PYTHON3:=/usr/bin/python3}"
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root for BPF"; exit 77; }
command -v "$GO" >/dev/null 2>&1 || { echo "SKIP: go (go tool pprof) not installed"; exit 77; }
py=/usr/bin/python3.11
[ -x $py ] || { echo "SKIP: $py not installed"; exit 77; }
# shellcheck disable=SC2154 # test_tag: set by the caller
work=$(mktemp -d "/tmp/pyperf-$test_tag.XXXXXX")
export HOME="$work"
