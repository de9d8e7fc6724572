#!/bin/sh
# Software nobody here wrote, from Debian's packages, under Debian's
# /usr/bin/python3.11 (contrib/bootstrap.sh installs them):
#   numpy   a Python function multiplying matrices: BLAS's *gemm* sits
#           under it, with gil=not_held (numpy releases the GIL);
#   pool    hashlib.sha256 and zlib.compress of big buffers in a
#           ThreadPoolExecutor: OpenSSL's and zlib's frames under each
#           worker's function, gil=not_held there.
# Asserts the stacks' shape (tests/check_shape.py), not only that a
# profile was written.
set -u
test_tag=real
. "$(cd "$(dirname "$0")" && pwd)/py311-common.sh"
pid=
trap '[ -n "$pid" ] && kill $pid 2>/dev/null; rm -rf "$work"' EXIT
failed=0

# profile WORKLOAD OUT: runs the workload and profiles it for 3 s.
profile() {
	rm -f "$work/ready"
	$py "$TOP_SRCDIR/tests/workloads/$1" 30 > "$work/ready" &
	pid=$!
	i=0
	until grep -q ready "$work/ready" 2>/dev/null; do
		i=$((i + 1)); [ $i -gt 300 ] && break; sleep 0.1
	done
	"$PYPERF" --pid $pid -d 3000 -q -o "$2" || failed=1
	kill $pid; wait $pid 2>/dev/null; pid=
}
shape() {	# NAME PROFILE FUNC REGEX
	name=$1 prof=$2 func=$3 re=$4
	if PYTHONPATH=$TOP_SRCDIR/tests "$PYTHON3" "$TOP_SRCDIR/tests/check_shape.py" --go "$GO" \
		"$prof" --func "$func" --native "$re" --min-share 0.5 --gil-not-held 0.9; then
		echo "PASS $name"
	else
		echo "FAIL $name"; failed=1
	fi
}

if $py -c 'import numpy' 2>/dev/null; then
	profile numpy_blas.py "$work/numpy.pb.gz"
	shape "numpy: *gemm* under matmul_loop" "$work/numpy.pb.gz" matmul_loop 'gemm'
else
	echo "FAIL numpy: python3-numpy is not installed for $py (contrib/bootstrap.sh installs it)"; failed=1
fi
profile hash_pool.py "$work/pool.pb.gz"
shape "pool: zlib under compress_chunk" "$work/pool.pb.gz" compress_chunk '^(deflate|deflate_[a-z]+|\[libz\.so.*\])$'
shape "pool: OpenSSL SHA-256 under hash_chunk" "$work/pool.pb.gz" hash_chunk 'SHA256|EVP_Digest|libcrypto|sha256_block|_sha256'
exit $failed
