# Sourced by the checks that change a scratch copy of the tracked tree
# (scripts/recipe-check.sh, scripts/option-check.sh): sets root, tmp, work
# (the copy), saved and top; shares this checkout's target directory, so
# only the copy's own crates are built again, and at exit puts back the
# files cargo copies to its top level and forgets the copy's fingerprints
# (this checkout's next build compiles its own crates again); defines
# `edit FILE OLD NEW`, which replaces OLD (that must occur once) by NEW.
# Usage: source scripts/scratch-copy.sh NAME   (NAME: the check's, for its messages)
root=$PWD
tmp=$(mktemp -d)
work="$tmp/critic-gate"
saved="$tmp/uplifted"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target}"
top="$CARGO_TARGET_DIR/release"
mkdir -p "$work" "$saved" "$top"
# cargo copies the last-built binary and library to the target's top level:
# keep this checkout's there.
find "$top" -maxdepth 1 -type f -exec cp -p {} "$saved/" \;
restore() {
  find "$saved" -maxdepth 1 -type f -exec cp -p {} "$top/" \;
  # The copy's crates are built under this checkout's names (cargo names a
  # workspace crate by its path inside the workspace), and this checkout's
  # sources are older than them: cargo would take them as this checkout's
  # own. Forget their fingerprints, so its next build compiles its own.
  rm -rf "$top/.fingerprint/critic-gate-"*
  rm -rf "$tmp"
}
trap restore EXIT
# The tracked tree as it is now, for both copies (edits made while this
# runs are not in them).
git ls-files -z | tar --null -T - -cf "$tmp/tree.tar"
tar -xf "$tmp/tree.tar" -C "$work"
# The conformance cases beside the checkout, where tests look for them.
[ -e "$root/../shared" ] && ln -s "$(cd "$root/../shared" && pwd)" "$tmp/shared"

edit() { # FILE OLD NEW: replace OLD (which must occur once) by NEW
  python3 - "$work/$1" "$2" "$3" <<'EOF'
import sys
path, old, new = sys.argv[1:]
text = open(path).read()
if text.count(old) != 1:
    sys.exit(f"{path}: the anchor occurs {text.count(old)} times, not once:\n{old}")
open(path, "w").write(text.replace(old, new))
EOF
}

