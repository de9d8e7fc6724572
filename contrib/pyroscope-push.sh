#!/bin/sh
# Pushes the pprof profiles that pyperf-pprof writes into a directory to a
# Grafana Pyroscope server (POST /ingest?format=pprof), each file once.
#
# The profiled time range is taken from the file: "until" is its
# modification time (pyperf-pprof writes a profile when its sampling ends)
# and "from" is that minus --interval seconds.  Pushed file names are
# recorded in a state file, so running this from cron, a systemd timer or a
# loop pushes each profile once; --delete-after-push removes them instead.
# Run one instance per state file at a time.
#
# Example:
#   contrib/pyroscope-push.sh --url http://pyroscope:4040 --app myapp \
#       --label env=prod --label host="$(hostname)" --interval 60 \
#       /var/lib/pyperf-pprof
#
# Needs curl.  Exit status: 0 all pushed (or nothing to push), 1 a push or
# the state file failed (the remaining files are left for the next run),
# 2 usage error.
set -u

usage()
{
	cat <<'EOF'
Usage: pyroscope-push.sh [options] DIR
Push DIR/*.pb.gz (pprof profiles) not pushed before to Grafana Pyroscope.

  -u, --url URL            Pyroscope server, e.g. http://pyroscope:4040
                           (default $PYROSCOPE_URL)
  -a, --app NAME           application name (default $PYROSCOPE_APP, else
                           pyperf-pprof)
  -l, --label KEY=VALUE    add a label to every profile (repeatable)
  -i, --interval SECONDS   time covered by each profile: from = mtime -
                           SECONDS, until = mtime (default 60)
  -s, --state FILE         names of the files already pushed
                           (default DIR/.pyroscope-pushed)
  -p, --pattern GLOB       files to push (default *.pb.gz)
      --delete-after-push  delete each profile once pushed
      --tenant ID          send X-Scope-OrgID: ID (multi-tenant Pyroscope)
      --netrc-file FILE    HTTP basic-auth credentials, in netrc format
  -n, --dry-run            print the curl commands, push nothing
  -h, --help               this help
EOF
}

die_usage()
{
	echo "pyroscope-push: $*" >&2
	echo "Try 'pyroscope-push.sh --help'." >&2
	exit 2
}

# Percent-encodes $1 (RFC 3986: all but A-Z a-z 0-9 - . _ ~).
urlencode()
{
	printf '%s' "$1" | LC_ALL=C awk '
		BEGIN { for (i = 1; i < 256; i++) ord[sprintf("%c", i)] = i }
		{
			if (NR > 1) printf "%%0A"
			n = length($0)
			for (i = 1; i <= n; i++) {
				c = substr($0, i, 1)
				if (c ~ /[A-Za-z0-9._~-]/) printf "%s", c
				else printf "%%%02X", ord[c]
			}
		}'
}

# Quotes $1 for a shell, for --dry-run output.
shquote()
{
	case $1 in
	'' | *[!A-Za-z0-9_./:=@%+,-]*)
		printf "'%s'" "$(printf '%s' "$1" | sed "s/'/'\\\\''/g")" ;;
	*)
		printf '%s' "$1" ;;
	esac
}

mtime()
{
	stat -c %Y -- "$1" 2>/dev/null || stat -f %m -- "$1" 2>/dev/null
}

url=${PYROSCOPE_URL:-}
app=${PYROSCOPE_APP:-pyperf-pprof}
labels=
interval=60
state=
pattern='*.pb.gz'
delete=0
tenant=
netrc=
dry=0
dir=

need_arg()
{
	[ "$2" -ge 2 ] || die_usage "$1 needs an argument"
}

while [ $# -gt 0 ]; do
	case $1 in
	--*=*)
		opt=${1%%=*}
		val=${1#*=}
		shift
		set -- "$opt" "$val" "$@"
		continue
		;;
	-u | --url) need_arg "$1" $#; url=$2; shift ;;
	-a | --app) need_arg "$1" $#; app=$2; shift ;;
	-l | --label)
		need_arg "$1" $#
		case $2 in
		[A-Za-z_]*=*) ;;
		*) die_usage "--label expects KEY=VALUE, got '$2'" ;;
		esac
		case ${2%%=*} in
		*[!A-Za-z0-9_]*) die_usage "label name '${2%%=*}' must be letters, digits and _" ;;
		esac
		case ${2#*=} in
		*[,{}]*) die_usage "label value '${2#*=}' must not contain , { or }" ;;
		esac
		labels=${labels:+$labels,}$2
		shift
		;;
	-i | --interval)
		need_arg "$1" $#
		case $2 in
		'' | *[!0-9]*) die_usage "--interval expects seconds, got '$2'" ;;
		esac
		interval=$2
		shift
		;;
	-s | --state) need_arg "$1" $#; state=$2; shift ;;
	-p | --pattern) need_arg "$1" $#; pattern=$2; shift ;;
	--delete-after-push) delete=1 ;;
	--tenant) need_arg "$1" $#; tenant=$2; shift ;;
	--netrc-file) need_arg "$1" $#; netrc=$2; shift ;;
	-n | --dry-run) dry=1 ;;
	-h | --help) usage; exit 0 ;;
	--) shift; break ;;
	-*) die_usage "unknown option '$1'" ;;
	*)
		[ -z "$dir" ] || die_usage "one directory only ('$dir', '$1')"
		dir=$1
		;;
	esac
	shift
done
if [ $# -gt 0 ]; then
	if [ -n "$dir" ] || [ $# -ne 1 ]; then
		die_usage "one directory only"
	fi
	dir=$1
fi
[ -n "$dir" ] || die_usage "no directory given"
[ -n "$url" ] || die_usage "no server: give --url or set PYROSCOPE_URL"
[ -n "$app" ] || die_usage "empty --app"
[ -d "$dir" ] || { echo "pyroscope-push: $dir is not a directory" >&2; exit 2; }
url=${url%/}
state=${state:-$dir/.pyroscope-pushed}
if [ "$dry" = 0 ] && ! command -v curl >/dev/null 2>&1; then
	echo "pyroscope-push: curl not found" >&2
	exit 1
fi

name=$app
[ -z "$labels" ] || name="$app{$labels}"
ename=$(urlencode "$name")

pushed=0
rc=0
for f in "$dir"/$pattern; do
	[ -f "$f" ] || continue		# no match: the pattern itself
	base=${f##*/}
	if [ -f "$state" ] && grep -qxF -- "$base" "$state"; then
		continue
	fi
	until=$(mtime "$f") || { echo "pyroscope-push: cannot stat $f" >&2; rc=1; break; }
	from=$((until - interval))
	query="name=$ename&from=$from&until=$until&format=pprof"
	set -- curl --fail --silent --show-error --retry 2 --max-time 120 \
		-X POST -H 'Content-Type: application/octet-stream'
	[ -z "$tenant" ] || set -- "$@" -H "X-Scope-OrgID: $tenant"
	[ -z "$netrc" ] || set -- "$@" --netrc-file "$netrc"
	set -- "$@" --data-binary "@$f" "$url/ingest?$query"
	if [ "$dry" = 1 ]; then
		sep=
		for a in "$@"; do
			printf '%s%s' "$sep" "$(shquote "$a")"
			sep=' '
		done
		printf '\n'
		continue
	fi
	if ! "$@" >/dev/null; then
		echo "pyroscope-push: pushing $f failed; will retry on the next run" >&2
		rc=1
		break
	fi
	if ! printf '%s\n' "$base" >>"$state"; then
		echo "pyroscope-push: cannot write $state" >&2
		rc=1
		break
	fi
	pushed=$((pushed + 1))
	[ "$delete" = 0 ] || rm -f -- "$f"
done

# Forget the names of files that are gone, so the state file stays small.
if [ "$dry" = 0 ] && [ -f "$state" ]; then
	tmp="$state.tmp.$$"
	if while IFS= read -r base; do
		if [ -e "$dir/$base" ]; then printf '%s\n' "$base"; fi
	done <"$state" >"$tmp"; then
		mv -f -- "$tmp" "$state"
	else
		rm -f -- "$tmp"
	fi
fi
[ "$dry" = 1 ] || [ "$pushed" = 0 ] || echo "pyroscope-push: pushed $pushed profile(s) to $url" >&2
exit $rc
