#!/bin/sh
# The documentation says what the program does (issue 24, finding 7):
#  options   every option of --help is in the man page's OPTIONS (with the
#            same short form) and in README.md, and the man page describes
#            no option --help lacks;
#  frames    every placeholder frame the pipeline writes ([truncated],
#            [Python not initialised]...) is listed in the man page's
#            PLACEHOLDER FRAMES and in README.md;
#  signals   every signal the profiler handles is in the man page;
#  exit 2    the man page's exit status 2 is what a usage error gives
#            (--no-such-option), and it does not claim that a run without
#            --pid ends with it (such a run profiles the whole host);
#  install   `make install` puts the man page where man(1) finds it, and
#            contrib/bootstrap.sh runs it.
# Exit 0 pass, 1 fail.
set -u
: "${PYPERF:=./pyperf-pprof}"
: "${TOP_SRCDIR:=$(cd "$(dirname "$0")/.." && pwd)}"
man1=$TOP_SRCDIR/doc/pyperf-pprof.1
readme=$TOP_SRCDIR/README.md
work=$(mktemp -d /tmp/pyperf-docs.XXXXXX)
trap 'rm -rf "$work"' EXIT
failed=0
fail() { echo "FAIL $*"; failed=1; }

# ---- options -----------------------------------------------------------
# --help: "  -p, --pid PID ..." and "      --subprocesses ...".
"$PYPERF" --help > "$work/help" || fail "--help exited non-zero"
sed -n 's/^  \(-[A-Za-z]\), \(--[a-z][-a-z]*\).*/\2 \1/p; s/^      \(--[a-z][-a-z]*\).*/\1/p' \
	"$work/help" | sort > "$work/help.opts"
# The man page's OPTIONS: .TP items up to the next section, as
# ".BI \-p " PID" "\fR, \fP\-\-pid " PID" or ".B \-\-subprocesses".
awk '/^\.SH OPTIONS/ { on = 1; next } /^\.SH / { on = 0 } on && prev == ".TP" { print } { prev = $0 }' \
	"$man1" | sed 's/\\-/-/g' | awk '{
		short = ""; long = ""
		for (i = 1; i <= NF; i++) {
			w = $i; gsub(/^"|"$/, "", w); gsub(/\\f[RPBI]/, "", w); gsub(/^,/, "", w)
			if (w ~ /^--[a-z][-a-z]*$/ && long == "") long = w
			else if (w ~ /^-[A-Za-z]$/ && short == "") short = w
		}
		if (long != "") print long (short != "" ? " " short : "")
	}' | sort > "$work/man.opts"
if [ "$(wc -l < "$work/help.opts")" -lt 20 ]; then
	fail "options: read only $(wc -l < "$work/help.opts") options from --help"
elif ! diff "$work/help.opts" "$work/man.opts" > "$work/opts.diff"; then
	sed 's/^</  --help only:/; s/^>/  man page only:/' "$work/opts.diff" | grep only
	fail "options: --help and the man page's OPTIONS differ (above)"
else
	echo "PASS options: the man page's OPTIONS has the $(wc -l < "$work/help.opts") options of --help, same short forms"
fi
missing=
for o in $(cut -d' ' -f1 "$work/help.opts"); do
	grep -q -- "$o\\b" "$readme" || missing="$missing $o"
done
if [ -n "$missing" ]; then
	fail "options: README.md does not mention:$missing"
else
	echo "PASS options: README.md mentions every option of --help"
fi

# ---- placeholder frames ------------------------------------------------
# The names the pipeline gives frames it cannot name otherwise: the string
# literals of synthetic() calls, and the fallback of unknown_native().
src=$TOP_SRCDIR/src/pipeline/sample.c
grep -v '^[[:space:]]*/\?\*' "$src" | grep -o '"\[[A-Za-z][^"%]*\]"' | tr -d '"' | sort -u > "$work/frames"
grep -q '"unknown");' "$src" && echo '[unknown]' >> "$work/frames"
grep -q '"\[%s\]"' "$src" && echo '[OBJECT]' >> "$work/frames"
section=$(awk '/^\.SH PLACEHOLDER FRAMES/ { on = 1; next } /^\.SH / { on = 0 } on' "$man1" |
	sed 's/\\-/-/g; s/\\f[RPBI]//g')
nf=0 bad=0
while read -r f; do
	nf=$((nf + 1))
	printf '%s\n' "$section" | grep -qF -- "$f" ||
		{ bad=1; fail "frames: $f is not in the man page's PLACEHOLDER FRAMES"; }
	grep -qF -- "$f" "$readme" || { bad=1; fail "frames: $f is not in README.md"; }
done < "$work/frames"
[ $nf -ge 8 ] || { bad=1; fail "frames: found only $nf placeholder names in $src"; }
[ $bad = 0 ] && echo "PASS frames: all $nf placeholder frames documented: $(tr '\n' ' ' < "$work/frames")"

# ---- signals -----------------------------------------------------------
nsig=0 bad=0
for sig in $(grep -oh 'sigaction(SIG[A-Z0-9]*' "$TOP_SRCDIR"/src/live/*.c | sed 's/sigaction(//' | sort -u); do
	nsig=$((nsig + 1))
	grep -q "$sig" "$man1" || { bad=1; fail "signals: $sig is handled but not in the man page"; }
done
[ $nsig -ge 3 ] || { bad=1; fail "signals: found only $nsig sigaction() calls"; }
[ $bad = 0 ] && echo "PASS signals: the $nsig signals handled are in the man page"

# ---- exit status 2 -------------------------------------------------------
status2=$(awk '/^\.SH EXIT STATUS/ { on = 1 } /^\.SH FILES/ { on = 0 } on' "$man1" |
	awk 'prev == ".TP" && $0 == ".B 2" { on = 1; next } on && /^\.(TP|SH)/ { on = 0 } on { print } { prev = $0 }' |
	tr '\n' ' ' | sed 's/\\-/-/g')
"$PYPERF" --no-such-option 2> /dev/null
rc=$?
if [ -z "$status2" ] || [ $rc != 2 ] || ! echo "$status2" | grep -qi "unknown option"; then
	fail "exit 2: --no-such-option exits $rc; the man page says of 2: '$status2'"
elif echo "$status2" | grep -q -- "--pid"; then
	fail "exit 2: the man page says no --pid exits 2; without --pid the whole host is profiled: '$status2'"
else
	echo "PASS exit 2: usage errors ($status2)"
fi

# ---- install ---------------------------------------------------------------
builddir=$(dirname "$PYPERF")
if [ -f "$builddir/Makefile" ]; then
	make -s -C "$builddir" install-man DESTDIR="$work/dest" > "$work/install.log" 2>&1
	page=$(find "$work/dest" -name pyperf-pprof.1 | head -1)
	if [ -z "$page" ]; then
		cat "$work/install.log"
		fail "install: make install-man installed no pyperf-pprof.1"
	elif ! command -v man > /dev/null 2>&1; then
		echo "note: man not installed: installed at ${page#"$work/dest"}, not looked up"
	elif found=$(MANPATH=$(dirname "$(dirname "$page")") man -w pyperf-pprof 2>&1) &&
		[ "$found" = "$page" ]; then
		echo "PASS install: make install puts the man page in ${page#"$work/dest"}, where man finds it"
	else
		fail "install: man -w did not find $page: $found"
	fi
	case ${page#"$work/dest"} in
	*/share/man/man1/pyperf-pprof.1 | /usr/share/man/man1/pyperf-pprof.1) ;;
	*) fail "install: ${page#"$work/dest"} is not in a man1 directory of man's default path";;
	esac
else
	echo "note: no Makefile beside $PYPERF: make install not tried"
fi
grep -q '^make install' "$TOP_SRCDIR/contrib/bootstrap.sh" ||
	fail "install: contrib/bootstrap.sh does not run make install (README: man pyperf-pprof)"
exit $failed
