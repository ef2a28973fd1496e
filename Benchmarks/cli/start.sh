#!/usr/bin/env bash
# How long a `lattice` command takes, from exec to exit, on a small store:
# the median of RUNS runs (default 30) of each command, release build.
#   Benchmarks/cli/start.sh [--runs N] [--lattice PATH]
# With --lattice, measures that binary (an older build, for a before/after) instead of building.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
RUNS=30
OPTIONS=(runs)
USAGE="[--runs N] [--lattice PATH]"
source "$HERE/common.sh"
STORE="$(mktemp -d)"
trap 'rm -rf "$STORE"' EXIT
"$L" init --store "$STORE/s" >/dev/null
"$L" zone create Movies --store "$STORE/s" >/dev/null
"$L" record save Movies/up --type Movie title=Up rating:int=5 --store "$STORE/s" >/dev/null

# perl (part of every Debian) times each run with a monotonic clock, outside the shell's forks.
measure() {
  perl -MTime::HiRes=clock_gettime,CLOCK_MONOTONIC -e '
    my ($runs, @command) = @ARGV; my @times;
    for my $i (1..$runs) {
      my @run = map { s/\{i\}/$i/gr } @command;
      my $start = clock_gettime(CLOCK_MONOTONIC);
      my $pid = fork // die "fork: $!";
      if ($pid == 0) { open(STDOUT, ">", "/dev/null"); open(STDERR, ">", "/dev/null"); exec(@run) or exit 127 }
      waitpid($pid, 0);
      die "@run failed ($?)\n" if $? != 0;
      push @times, (clock_gettime(CLOCK_MONOTONIC) - $start) * 1000;
    }
    @times = sort { $a <=> $b } @times;
    printf "%7.1f ms  %s\n", $times[int(@times / 2)], join(" ", @command[1..$#command]);
  ' "$RUNS" "$@"
}
echo "median of $RUNS runs, $("$L" --version 2>/dev/null || echo "a build without --version")"
measure "$L" --help
"$L" --version >/dev/null 2>&1 && measure "$L" --version
measure "$L" id --store "$STORE/s"
measure "$L" record get Movies/up --store "$STORE/s"
measure "$L" record save "Movies/r{i}" --type Movie "title=t{i}" --store "$STORE/s"
