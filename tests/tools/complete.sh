#!/bin/bash
# tests/tools/complete.sh OUT WORD... - what bash completion offers for the
# last WORD of a command line, with faultline's completion
# (etc/bash-completion/faultline) and the binaries of OUT first on PATH.
# Prints the candidates, one line.
set -u
out=$1
shift
source /usr/share/bash-completion/bash_completion || exit 2
source "$(dirname "$0")/../../etc/bash-completion/faultline" || exit 2
PATH=$(cd "$out" && pwd):$PATH
COMP_WORDS=("$@")
COMP_CWORD=$(($# - 1))
COMP_LINE="$*"
COMP_POINT=${#COMP_LINE}
COMPREPLY=()
fn=$(complete -p "$1" | sed 's/.*-F \([^ ]*\) .*/\1/')
"$fn" "$1" "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
echo "${COMPREPLY[*]}"
