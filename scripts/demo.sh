#!/usr/bin/env bash
# The main job on a demo vault: create it, add the sample notes shipped in examples/, index,
# and run a few searches. Safe to re-run: the demo vault is recreated each time.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
tmem="${TMEM:-$here/.venv/bin/tmem}"
vault="${DEMO_VAULT:-$here/demo-vault}"

if [ -d "$vault" ]; then
  TMEM_VAULT="$vault" "$tmem" daemon stop >/dev/null 2>&1 || true  # a previous demo's daemon
fi
rm -rf "$vault"
"$tmem" init "$vault"
cp -R "$here/examples/demo-notes/memory/." "$vault/memory/"
git -C "$vault" add -A
git -C "$vault" -c user.name=tmem -c user.email=tmem@localhost commit -q -m "demo: add sample notes"
export TMEM_VAULT="$vault"

"$tmem" remember --category decision --project survey-app --tags gnss \
  "Use RTK fixed solutions only for control points; float solutions are rejected on import."

echo; echo "== tmem reindex"
"$tmem" reindex
for query in "why did uploads block on the database" "坐标系" "how do we handle flaky tests"; do
  echo; echo "== tmem search \"$query\""
  "$tmem" search -k 3 "$query"
done
echo; echo "== tmem status"
"$tmem" status

# The searches above started a daemon in the background to keep the model and indexes warm
# (~500 MB). A demo should not leave it behind: stop it, and say how to bring it back.
echo; echo "== tmem daemon stop"
"$tmem" daemon stop
echo "(the searches started a background daemon that keeps the model warm; it is stopped now."
echo " Any search starts it again; stop it with: TMEM_VAULT=$vault $tmem daemon stop)"
