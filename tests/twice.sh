# Sourced by end-to-end tests that keep their verdict in $failed.
# twice FN NAME ARGS...: FN NAME ARGS..., and once more if that set
# $failed. Both runs are printed; the case fails only if both do. For
# checks with a known rare miss (each caller says which), never for a
# check that is simply flaky.
twice() {
	twice_before=$failed
	"$@"
	[ "$failed" = "$twice_before" ] && return
	echo "note: $2 failed once; running it again"
	failed=$twice_before
	"$@"
}
