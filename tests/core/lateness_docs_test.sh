#!/usr/bin/env bash
# docs/LATENESS.md's tables are //tools/gen:wheel_table --lateness output, as it
# is now: the page cannot drift from the code (the numbers themselves are
# checked against kt_base_max_lateness() by tests/core/lateness_test.cc).
set -euo pipefail
tool=$1
doc=docs/LATENESS.md
[ -f "$doc" ] || { echo "$doc not found"; exit 1; }
# The two generated blocks, without the prose between them.
blocks() { sed -n '/^<!-- levels:begin/,/^<!-- levels:end -->/p; /^<!-- lateness:begin/,/^<!-- lateness:end -->/p'; }
want=$("$tool" --lateness | blocks)
got=$(blocks <"$doc")
if [ "$want" != "$got" ]; then
	echo "docs/LATENESS.md differs from \`bazel run //tools/gen:wheel_table -- --lateness\` (< page, > tool):"
	diff <(echo "$got") <(echo "$want") || true
	exit 1
fi
echo "docs/LATENESS.md: $(echo "$got" | grep -c '^| [0-9]') rows, as the tool prints them"
