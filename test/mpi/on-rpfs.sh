# on-rpfs.sh: sourced by the MPI test runners. A test passes only when it
# shellcheck shell=sh
# can show that it ran on rpfs, not merely that it printed " No Errors":
# a program that misreads its options (ROMIO's aggregation1 took "-fname X"
# as "-f name") silently writes a local file through ROMIO's ufs driver.
#
# The proof, per test:
#   - it runs in a fresh, empty scratch directory outside the clone, which
#     must still be empty afterwards (no local file was made instead);
#   - each file it keeps must exist on rpfs afterwards (`rpfs stat`);
#   - each file it is told to delete gets an empty marker on rpfs before
#     the run and must be gone afterwards: only a delete that reached rpfs
#     removes it.
#
# Needs RPFS_CLI (the rpfs command) and RPFS_CONFIG (the server set).

# rpfs_exists PATH: the path exists on rpfs.
rpfs_exists() {
    "$RPFS_CLI" stat "$1" >/dev/null 2>&1
}

# place_markers PATH...: an empty file at each PATH on rpfs, replacing what
# was there. Without them a deleted file proves nothing: prints why and
# returns 1 if one cannot be placed.
place_markers() {
    _empty="$WORK/.empty-marker"
    : >"$_empty"
    for _p in "$@"; do
        "$RPFS_CLI" rm "$_p" >/dev/null 2>&1 || true
        if ! _out=$("$RPFS_CLI" cp "$_empty" "rpfs:$_p" 2>&1) || ! rpfs_exists "$_p"; then
            echo "    could not place a marker at $_p on rpfs: $_out"
            return 1
        fi
    done
}

# scratch_dir NAME: print a new empty directory for one run.
scratch_dir() {
    d="$WORK/cwd/$(printf '%s' "$1" | tr -c 'A-Za-z0-9_.-' '_')"
    rm -rf "$d"
    mkdir -p "$d"
    printf '%s\n' "$d"
}

# prove_on_rpfs SCRATCH KEPT DELETED: check a finished run. KEPT and DELETED
# are space-separated rpfs paths (either may be empty). Prints one line per
# problem and returns 1 if there is any.
prove_on_rpfs() {
    _scratch=$1 _kept=$2 _deleted=$3 _bad=0
    if [ -z "$_kept$_deleted" ]; then
        echo "    no rpfs file named for this test: it cannot show that it ran on rpfs"
        _bad=1
    fi
    for _p in $_kept; do
        rpfs_exists "$_p" || { echo "    $_p is not on rpfs after the run"; _bad=1; }
    done
    for _p in $_deleted; do
        rpfs_exists "$_p" && { echo "    $_p is still on rpfs: the test's delete never reached rpfs"; _bad=1; }
    done
    if [ -n "$(ls -A "$_scratch" 2>/dev/null)" ]; then
        echo "    local files appeared in the working directory: $(ls -A "$_scratch" | tr '\n' ' ')"
        _bad=1
    fi
    return $_bad
}
