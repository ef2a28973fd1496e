#!/usr/bin/env bash
# `lattice batch` throughput: LINES single-record saves (default 10,000), one
# JSON line each, from a file; the median of RUNS runs (default 3) on a fresh
# store each, release build. For scale, 100 `lattice record save` processes.
#   Benchmarks/cli/batch.sh [--lines N] [--runs N] [--lattice PATH]
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
LINES=10000
RUNS=3
OPTIONS=(lines runs)
USAGE="[--lines N] [--runs N] [--lattice PATH]"
source "$HERE/common.sh"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
perl -e 'for my $i (0..$ARGV[0]-1) { printf "{\"operationType\":\"forceUpdate\",\"record\":{\"recordName\":\"m%d\",\"recordType\":\"Movie\",\"fields\":{\"title\":{\"value\":\"title %d\"},\"rating\":{\"value\":%d,\"type\":\"INT64\"}}}}\n", $i, $i, $i % 1000 }' "$LINES" > "$WORK/ops.jsonl"
fresh() { rm -rf "$WORK/s"; "$L" init --store "$WORK/s" >/dev/null; "$L" zone create Movies --store "$WORK/s" >/dev/null; }
perl -MTime::HiRes=clock_gettime,CLOCK_MONOTONIC -e '
  my ($runs, $lines, $lattice, $work) = @ARGV; my @times;
  for (1..$runs) {
    system("rm -rf $work/s && $lattice init --store $work/s >/dev/null && $lattice zone create Movies --store $work/s >/dev/null") == 0 or die;
    my $start = clock_gettime(CLOCK_MONOTONIC);
    system("$lattice batch --zone Movies --store $work/s < $work/ops.jsonl > $work/out.jsonl") == 0 or die "batch failed\n";
    push @times, clock_gettime(CLOCK_MONOTONIC) - $start;
  }
  @times = sort { $a <=> $b } @times; my $median = $times[int(@times / 2)];
  printf "batch: %d saves in %.2f s, %.0f saves/s (median of %d)\n", $lines, $median, $lines / $median, $runs;
' "$RUNS" "$LINES" "$L" "$WORK"
fresh
perl -MTime::HiRes=clock_gettime,CLOCK_MONOTONIC -e '
  my ($lattice, $work) = @ARGV; my $start = clock_gettime(CLOCK_MONOTONIC);
  for my $i (0..99) { system("$lattice record save Movies/m$i --type Movie title=t$i rating:int=$i --store $work/s >/dev/null") == 0 or die }
  my $took = clock_gettime(CLOCK_MONOTONIC) - $start;
  printf "one process per save: 100 saves in %.2f s, %.0f saves/s\n", $took, 100 / $took;
' "$L" "$WORK"
