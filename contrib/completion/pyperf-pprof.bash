# bash completion for pyperf-pprof(1)
#
# Install as $(datadir)/bash-completion/completions/pyperf-pprof, or source
# it from ~/.bashrc.  Self-contained: uses only COMP_WORDS and COMP_CWORD,
# so it works with or without the bash-completion package.
#
# The option list is read from `pyperf-pprof --help` (once per binary), so
# options added later are completed too; the built-in list below is the
# fallback when the binary cannot be run.

_pyperf_pprof_static_opts='-p --pid -d --duration -o --out --format -e --event
-c --sample-period -F --frequency --ringbuf-size --no-native --native
--all-native --kernel
--stack-bytes -v --verbose -q --quiet -h --help --version --subprocesses
--interval --keep --mode --gil --record --replay --unwind'
# Options that take an argument (the rest are flags).
_pyperf_pprof_static_argopts=' -p --pid -d --duration -o --out --format -e
--event -c --sample-period -F --frequency --ringbuf-size --stack-bytes
--interval --keep --mode --record --replay --unwind '

# Sets _pyperf_pprof_opts and _pyperf_pprof_argopts from "$1 --help".
_pyperf_pprof_parse_help()
{
    local bin=$1 line re opt
    if [[ $bin == "$_pyperf_pprof_cached_bin" && -n $_pyperf_pprof_opts ]]; then
        return
    fi
    _pyperf_pprof_opts=$_pyperf_pprof_static_opts
    _pyperf_pprof_argopts=$_pyperf_pprof_static_argopts
    local path
    path=$(type -P -- "$bin" 2>/dev/null) || return
    [[ -x $path ]] || return
    local help
    help=$("$path" --help 2>/dev/null) || return
    local opts='' argopts=' '
    # "  -p, --pid PID   ..." or "      --native   ..."
    re='^ +(-([A-Za-z0-9]), )?(--[A-Za-z0-9][-A-Za-z0-9]*)(=| )?([A-Z][A-Z_]*)?'
    while IFS= read -r line; do
        [[ $line =~ $re ]] || continue
        opt=${BASH_REMATCH[3]}
        opts+=" ${BASH_REMATCH[1]:+-${BASH_REMATCH[2]} }$opt"
        if [[ -n ${BASH_REMATCH[5]} ]]; then
            argopts+="$opt "
            [[ -n ${BASH_REMATCH[2]} ]] && argopts+="-${BASH_REMATCH[2]} "
        fi
    done <<<"$help"
    if [[ -n $opts ]]; then
        _pyperf_pprof_opts=$opts
        _pyperf_pprof_argopts=$argopts
    fi
    _pyperf_pprof_cached_bin=$bin
}

# PIDs of running Python processes: comm or argv[0] starts with "python".
_pyperf_pprof_python_pids()
{
    local d comm argv0 pids=()
    for d in /proc/[0-9]*; do
        comm='' argv0=''
        read -r comm 2>/dev/null <"$d/comm" || continue
        IFS= read -r -d '' argv0 2>/dev/null <"$d/cmdline"
        argv0=${argv0##*/}
        if [[ $comm == python* || $argv0 == python* ]]; then
            pids+=("${d#/proc/}")
        fi
    done
    ((${#pids[@]})) && printf '%s\n' "${pids[@]}"
}

_pyperf_pprof()
{
    local cur prev
    local -a words=("${COMP_WORDS[@]}")
    local cword=$COMP_CWORD
    COMPREPLY=()
    cur=${words[cword]}
    prev=${words[cword-1]}
    # COMP_WORDBREAKS splits "--out=FILE" into "--out" "=" "FILE".
    if [[ $cur == = ]]; then
        cur=''
    elif [[ $prev == = && $cword -ge 2 ]]; then
        prev=${words[cword-2]}
    elif [[ $cur == --*=* ]]; then
        prev=${cur%%=*}
        cur=${cur#*=}
    fi

    _pyperf_pprof_parse_help "${words[0]:-pyperf-pprof}"

    case $prev in
    -p | --pid)
        local pids
        pids=$(_pyperf_pprof_python_pids)
        [[ -z $pids ]] && pids=$(cd /proc && printf '%s\n' [0-9]*)
        mapfile -t COMPREPLY < <(compgen -W "$pids" -- "$cur")
        return
        ;;
    -o | --out)
        if declare -F _filedir >/dev/null; then
            _filedir
        else
            compopt -o filenames 2>/dev/null
            mapfile -t COMPREPLY < <(compgen -f -- "$cur")
        fi
        return
        ;;
    -e | --event)
        mapfile -t COMPREPLY < <(compgen -W 'cpu-clock task-clock cycles' -- "$cur")
        return
        ;;
    --format)
        mapfile -t COMPREPLY < <(compgen -W 'pprof collapsed' -- "$cur")
        return
        ;;
    -d | --duration)
        mapfile -t COMPREPLY < <(compgen -W '0 1000 5000 10000 30000 60000' -- "$cur")
        return
        ;;
    -c | --sample-period)
        mapfile -t COMPREPLY < <(compgen -W '1000000 10000000' -- "$cur")
        return
        ;;
    -F | --frequency)
        mapfile -t COMPREPLY < <(compgen -W '19 49 99 199 499 997' -- "$cur")
        return
        ;;
    --ringbuf-size)
        mapfile -t COMPREPLY < <(compgen -W '4194304 8388608 16777216 33554432 67108864' -- "$cur")
        return
        ;;
    --stack-bytes)
        mapfile -t COMPREPLY < <(compgen -W '4096 8192 16384 32768 65536' -- "$cur")
        return
        ;;
    --unwind)
        mapfile -t COMPREPLY < <(compgen -W 'user kernel both' -- "$cur")
        return
        ;;
    esac
    # Any other option that takes an argument (one added after this file):
    # complete file names, the most likely kind of argument.
    if [[ $prev == -* && $_pyperf_pprof_argopts == *" $prev "* ]]; then
        compopt -o filenames 2>/dev/null
        mapfile -t COMPREPLY < <(compgen -f -- "$cur")
        return
    fi

    if [[ $cur == -* || -z $cur ]]; then
        # shellcheck disable=SC2086
        mapfile -t COMPREPLY < <(compgen -W "$_pyperf_pprof_opts" -- "$cur")
    fi
}

complete -F _pyperf_pprof pyperf-pprof
