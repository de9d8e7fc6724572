#!/bin/sh
# Our profile in speedscope in a real browser (issue 9): profiles
# tests/workloads/ratio.py, serves speedscope's built app (npm package
# "speedscope", pinned in tests/node/package.json) and the profile from
# localhost, opens them in Debian's Chromium through playwright-core and
# checks the Sandwich view (tests/speedscope_test.js). Leaves a screenshot
# in tests/artifacts/speedscope-sandwich.png.
# Exit codes follow automake: 0 pass, 1 fail, 77 skip (with a reason).
set -u
name=speedscope
. "${TOP_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}/tests/client-common.sh"
: "${CHROMIUM:=/usr/bin/chromium}"
: "${NODE:=node}"
: "${NODE_DIR:=$TOP_SRCDIR/tests/node}"
# An unpacked tarball (make distcheck) has the pinned package.json and lock
# but no node_modules, and a read-only source tree: install into the build
# tree from the same lock.
if [ ! -d "$NODE_DIR/node_modules" ] && command -v npm >/dev/null 2>&1; then
	mkdir -p tests/node
	cp "$NODE_DIR/package.json" "$NODE_DIR/package-lock.json" tests/node/ 2>/dev/null &&
		chmod u+w tests/node/package.json tests/node/package-lock.json &&
		npm ci --prefix tests/node --no-audit --no-fund > /dev/null 2>&1 &&
		NODE_DIR=$(pwd)/tests/node
fi
: "${ARTIFACTS:=$(pwd)/tests/artifacts}"

[ -x "$CHROMIUM" ] || skip "$CHROMIUM not installed (Debian package chromium)"
need_profiling
command -v "$NODE" >/dev/null 2>&1 || fail "node not installed (Debian packages nodejs npm)"
for m in speedscope/dist/release/index.html playwright-core/package.json; do
	[ -f "$NODE_DIR/node_modules/$m" ] ||
		fail "$NODE_DIR/node_modules/$m missing: run npm ci --prefix $NODE_DIR"
done
make_workdir
# Python frames only: these tests check what the clients show of a known
# Python call tree; native merging has its own e2e scenario.
profile_ratio "$work/profile.pb.gz" --no-native
"$NODE" "$TOP_SRCDIR/tests/speedscope_test.js" --profile "$work/profile.pb.gz" \
	--node-dir "$NODE_DIR" --chromium "$CHROMIUM" \
	--workload "$TOP_SRCDIR/tests/workloads/ratio.py" \
	--screenshot "$ARTIFACTS/speedscope-sandwich.png" ||
	fail "speedscope checks failed"
echo "PASS $name"
