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
# - A module compiled against an older version of a module it imports is not always compiled
#   again when that module changes (a stored property added to a struct it inlines: seen as a
#   crash at run time). So the entry records the commit it was last built at, and the build
#   directories of every module that depends on a module changed since (Sources/<module>,
#   Tests/<module>, Benchmarks/<module>) are removed: they compile again, whole.
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

# Removes, from the build directories, those of the modules that depend on a module changed
# since the commit `$1/commit` records (of every module that depends on another, when it
# records none that this clone knows; an empty entry has none to remove).
drop_stale_dependents() {
  local entry="$1" recorded="" changed
  [[ -f "$entry/commit" ]] && recorded="$(cat "$entry/commit")"
  if [[ -n "$recorded" ]] && git cat-file -e "$recorded^{commit}" 2>/dev/null; then
    changed="$(git diff --name-only "$recorded" HEAD -- Sources Tests Benchmarks Examples)"
  else
    changed="*"
  fi
  [[ -n "$changed" ]] || return 0
  CHANGED="$changed" python3 -c '
import glob, json, os, shutil, subprocess
# The root package and the consumer package built into the same directories (.ci/run): a
# dependency on one of the root package'"'"'s products is one on the module of that name.
dependencies, paths = {}, {}
for package_path in [".", "Examples/GenerableTour"]:
    dump = subprocess.run(["swift", "package", "--package-path", package_path, "dump-package"],
                          capture_output=True, text=True, check=True).stdout
    for target in json.loads(dump)["targets"]:
        names = [next(iter(dependency.values()))[0] for dependency in target.get("dependencies", [])]
        dependencies[target["name"]] = {name for name in names if name}
        default = ("Tests/" if target["type"] == "test" else "Sources/") + target["name"]
        paths[target["name"]] = os.path.normpath(os.path.join(package_path, target.get("path") or default))
changed_files = os.environ["CHANGED"].split("\n")
if "*" in changed_files:
    changed = set(dependencies)
else:
    changed = {name for name, path in paths.items() if any(file.startswith(path + "/") for file in changed_files)}
stale, grew = set(), True
while grew:
    grew = False
    for name, uses in dependencies.items():
        if name not in stale and uses & (changed | stale):
            stale.add(name)
            grew = True
removed, roots = set(), set()
for name in stale:
    for directory in glob.glob(f".build*/*/*/{name}.build") + glob.glob(f"Tests/Fuzz/.build/*/*/{name}.build"):
        shutil.rmtree(directory, ignore_errors=True)
        removed.add(name)
        roots.add(os.path.dirname(os.path.dirname(os.path.dirname(directory))))
# The output file maps of the removed modules are written when SwiftPM plans a build; a plan it
# thinks current (a fuzz run after one whose sources did not change: seen failing with "unable
# to load output file map") would not write them. Without its llbuild manifest it plans again
# (seconds), and llbuild still reruns only the commands whose inputs changed.
for root in roots:
    for manifest in glob.glob(os.path.join(root, "*.yaml")):
        os.remove(manifest)
if removed:
    print("build cache: compiling again the modules that import a changed one: " + ", ".join(sorted(removed)))
' || {
    echo "build cache: cannot tell which modules import a changed one; building cold"
    rm -rf "$entry"/.build/* "$entry"/.build-baseline/* "$entry"/.build-tsan/* "$entry"/Tests/Fuzz/.build/*
  }
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
  drop_stale_dependents "$entry"
  git rev-parse HEAD > "$entry/commit"
}
