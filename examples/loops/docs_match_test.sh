#!/bin/sh
# docs/LOOPS.md shows each example whole: the ```c block after the line
# "<!-- example: PATH -->" must be PATH, byte for byte.
doc=docs/LOOPS.md
rc=0
for f in $(sed -n 's/^<!-- example: \(.*\) -->$/\1/p' "$doc"); do
	awk -v want="$f" '
		$0 == "<!-- example: " want " -->" { found = 1; next }
		found && $0 == "```c" { inblock = 1; next }
		inblock && $0 == "```" { exit }
		inblock { print }
	' "$doc" | cmp -s - "$f" || { echo "docs/LOOPS.md: the block for $f differs from the file"; rc=1; }
	n=$((n + 1))
done
[ "${n:-0}" -eq 3 ] || { echo "expected 3 examples in $doc, found ${n:-0}"; rc=1; }
exit $rc
