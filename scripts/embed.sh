#!/bin/sh
# embed.sh NAME FILE - print a C file defining `const char NAME[]` with the
# contents of FILE, so a binary carries its documented default config.
set -eu
name=$1
file=$2
echo "/* generated from $file by scripts/embed.sh; do not edit */"
echo "const char $name[] ="
sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/^/\t"/' -e 's/$/\\n"/' "$file"
echo ";"
