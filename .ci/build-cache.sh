# Sourced by .ci/run: keeps the build directories between runs on the same machine, in
# $TYPESET_CACHE/build (as the downloads are kept), so that a run compiles only what changed
# since the last one instead of every module and dependency (about 20 of a cold run's minutes
# on 2 cores).
#
# - SwiftPM reruns a compilation when an input's modification time differs from the one it
#   recorded, and a fresh clone stamps every file with the time of the clone. So each tracked
#   file's time is set to that of the last commit that changed it: a file that did not change
#   since the last run has the time it had then; one that did (or went back to older content)
#   has another and is compiled again.
# - Compiler command lines name the checkout's path, so the cache is kept per checkout path and
#   toolchain (one entry: the others are removed) and a run from another path builds cold.
# - One run at a time uses the entry (a lock); a run that finds it taken builds cold in its
#   own directories.
# - `rm -rf "$TYPESET_CACHE/build"` empties it.

restore_commit_times() {
  # One `git log` pass: the first time a path appears, newest first, is its last change.
  git log --format='@%ct' --name-only --no-renames HEAD | python3 -c '
import os, sys
seen, stamp = set(), None
for line in sys.stdin:
    line = line.rstrip("\n")
    if line.startswith("@"):
        stamp = int(line[1:])
    elif line and line not in seen:
        seen.add(line)
        if os.path.isfile(line) and not os.path.islink(line):
            os.utime(line, (stamp, stamp))
'
}

use_build_cache() {
  local key entry dir
  key="$( { swift --version 2>&1 | head -n 1; pwd -P; } | sha256sum | cut -c1-16)"
  mkdir -p "$TYPESET_CACHE/build"
  entry="$TYPESET_CACHE/build/$key"
  exec 9>"$entry.lock"
  if ! flock -n 9; then
    echo "build cache: in use by another run; building cold"
    return 0
  fi
  for old in "$TYPESET_CACHE"/build/*; do
    [[ "$old" == "$entry" || "$old" == "$entry.lock" ]] || rm -rf "$old"
  done
  restore_commit_times
  if [[ -d "$entry" ]]; then echo "build cache: $entry"; else echo "build cache: $entry (empty: a cold build)"; fi
  for dir in .build .build-baseline .build-tsan Tests/Fuzz/.build; do
    mkdir -p "$entry/$dir"
    rm -rf "$dir"
    ln -s "$entry/$dir" "$dir"
  done
}
