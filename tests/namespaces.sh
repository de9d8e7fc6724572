#!/bin/sh
# PID namespaces: a target in its own PID namespace profiled from the host
# (native_thread_id is the target's view of its tids), and the profiler in
# the target's namespace, as a Kubernetes sidecar with shareProcessNamespace.
set -u
: "${PYPERF:=./pyperf-pprof}"
: "${TOP_SRCDIR:=$(cd "$(dirname "$0")/.." && pwd)}"
: "${GO:=go}"
: "${PYTHON3:=/usr/bin/python3}"
py=/usr/bin/python3.11
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root for BPF and unshare"; exit 77; }
[ -x $py ] || { echo "SKIP: $py not present"; exit 77; }
command -v unshare >/dev/null || { echo "SKIP: unshare (util-linux) missing"; exit 77; }
work=$(mktemp -d /tmp/pyperf-ns.XXXXXX)
PYPERF=$(cd "$(dirname "$PYPERF")" && pwd)/$(basename "$PYPERF")
trap 'pkill -f "$work" 2>/dev/null; rm -rf "$work"' EXIT
failed=0
cp "$TOP_SRCDIR/tests/workloads/threads.py" "$work/threads.py"

check() {
	if HOME=$work "$PYTHON3" "$TOP_SRCDIR/tests/check_profile.py" --go "$GO" \
		--scenario threads --workload "$work/threads.py" "$1"; then
		echo "PASS $2"
	else
		echo "FAIL $2"; failed=1
	fi
}

# 1. Profiler on the host, target in a new PID namespace.
unshare --pid --fork --mount-proc $py "$work/threads.py" 20 > "$work/ready" &
i=0
until grep -q ready "$work/ready" 2>/dev/null || [ $i -gt 100 ]; do i=$((i+1)); sleep 0.1; done
target=$(pgrep -f "^$py $work/threads.py" | head -1)
"$PYPERF" --pid "$target" -d 1500 -o "$work/host.pb.gz" -q
check "$work/host.pb.gz" host-profiles-container
pkill -f "$work/threads.py"

# 2. Profiler inside the target's PID namespace, given the namespace's pid.
cat > "$work/sidecar.sh" <<EOS
$py "$work/threads.py" 20 > "$work/ready2" &
i=0
until grep -q ready "$work/ready2" 2>/dev/null || [ \$i -gt 100 ]; do i=\$((i+1)); sleep 0.1; done
echo "target pid in the namespace: \$!"
"$PYPERF" --pid \$! -d 1500 -o "$work/sidecar.pb.gz" -q
EOS
unshare --pid --fork --mount-proc sh "$work/sidecar.sh"
check "$work/sidecar.pb.gz" sidecar-in-namespace

# 3. A target in a chroot (and its own mount and PID namespaces) running a
#    copy of the interpreter at a path that does not exist on the host: its
#    files are reached through /proc/PID/map_files and /proc/PID/root.
root=$work/chroot
snake=/opt/pyperf-snake-$$/bin/snake3
if [ -e "$snake" ]; then
	echo "SKIP chroot: $snake exists on the host"
else
	mkdir -p "$root$(dirname "$snake")" "$root/opt/pyperf-snake-$$/lib"
	cp $py "$root$snake"
	for l in $(ldd $py | grep -o '/lib[^ ]*'); do mkdir -p "$root$(dirname "$l")"; cp "$l" "$root$l"; done
	cp -a /usr/lib/python3.11 "$root/opt/pyperf-snake-$$/lib/python3.11"
	cat > "$root/work.py" <<'EOS'
import time
def chroot_work():
    end = time.time() + 6
    while time.time() < end:
        pass
print("ready", flush=True)
chroot_work()
EOS
	unshare --pid --mount --fork chroot "$root" "$snake" -S /work.py > "$work/ready3" &
	i=0
	until grep -q ready "$work/ready3" 2>/dev/null || [ $i -gt 100 ]; do i=$((i+1)); sleep 0.1; done
	target=$(pgrep -f "^$snake" | head -1)
	"$PYPERF" --pid "$target" -d 1500 -o "$work/chroot.pb.gz" -q
	if HOME=$work "$GO" tool pprof -top "$work/chroot.pb.gz" 2>/dev/null | grep -q chroot_work; then
		echo "PASS chroot (interpreter at $snake, absent on the host)"
	else
		echo "FAIL chroot: no chroot_work in the profile"; failed=1
	fi
	# Its mappings are named inside its root, as the process names them.
	maps=$(HOME=$work "$GO" tool pprof -raw "$work/chroot.pb.gz" 2>/dev/null | sed -n '/^Mappings/,$p')
	if echo "$maps" | grep -q " $snake " && ! echo "$maps" | grep -qF "$root/"; then
		echo "PASS chroot: mappings name $snake, not $root$snake"
	else
		echo "FAIL chroot: mappings, want $snake without $root:"; echo "$maps"; failed=1
	fi
	wait
fi
exit $failed
