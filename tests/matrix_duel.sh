#!/bin/sh
# matrix_duel.sh BATON: `baton bench matrix`'s duels.  The smoke matrix has
# none unless asked; with --confirm 3 every cell must have a duel of 3
# rounds against the two fastest references: one "duel" line per cell, the
# summary counting as many as the cells, and the JSON giving each cell its
# duel (rounds, references, the judging one, a positive ratio and
# q1 <= ratio <= q3).  --confirm-below restricts the duels to cells
# below it (none below a ratio of 0.001).  Bad values are refused.
set -u
BATON=$1
tmp=$(mktemp -d "${TMPDIR:-/tmp}/matrix_duel.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }

"$BATON" bench matrix --smoke --confirm 40 >/dev/null 2>&1 && fail "--confirm 40 (over the limit) accepted"
"$BATON" bench matrix --smoke --confirm-below 0 >/dev/null 2>&1 && fail "--confirm-below 0 accepted"

if ! "$BATON" bench matrix --smoke --also '' --confirm 3 --json "$tmp/m.json" >"$tmp/out"; then
    cat "$tmp/out"
    fail "bench matrix --smoke --confirm 3 failed"
fi
cat "$tmp/out"
cells=$(sed -n 's/^summary: \([0-9]*\) cells\{0,1\} in .*/\1/p' "$tmp/out")
duels=$(sed -n 's/^  \([0-9]*\) cells\{0,1\} judged by a duel of 3 alternated rounds .*/\1/p' "$tmp/out")
lines=$(grep -c '^    duel, 3 alternated rounds, 2 references: default / ' "$tmp/out")
[ -n "$cells" ] && [ "$cells" -gt 0 ] || fail "no summary line"
[ "$duels" = "$cells" ] || fail "the summary counts ${duels:-no} duels for $cells cells"
[ "$lines" = "$cells" ] || fail "$lines duel lines for $cells cells"
python3 - "$tmp/m.json" "$cells" <<'PY' || fail "the JSON's duels"
import json, sys
doc = json.load(open(sys.argv[1]))
cells = doc["results"]
assert doc["duels"] == len(cells) and doc["confirm"] == 3, (doc["duels"], doc["confirm"])
assert len(cells) == int(sys.argv[2]), (len(cells), sys.argv[2])
for r in cells:
    d = r["duel"]
    assert d is not None and d["rounds"] == 3 and d["references"] == 2 and d["reference"], r["cell"]
    assert d["ratio"] > 0 and d["q1"] <= d["ratio"] <= d["q3"], (r["cell"], d)
PY
out=$("$BATON" bench matrix --smoke --also '' --confirm 3 --confirm-below 0.001) || fail "--confirm-below 0.001 failed"
echo "$out" | grep -q '^    duel, ' && fail "--confirm-below 0.001: a duel ran"
echo "$out" | grep -q 'judged by a duel' && fail "--confirm-below 0.001: the summary counts duels"
[ "$fails" -eq 0 ] && echo "matrix_duel: ok ($cells cells, each with a duel)"
exit "$fails"
