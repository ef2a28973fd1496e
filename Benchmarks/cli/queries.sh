#!/usr/bin/env bash
# The query planner on 100,000 records (RECORDS), through the CLI: for each
# query shape, the rows and records read (`--explain --json`) and the median
# time of RUNS runs of the whole `lattice query` process, release build.
#   Benchmarks/cli/queries.sh [--records N] [--runs N] [--lattice PATH]
# With --lattice, measures that binary (an older build, for a before/after).
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
RECORDS=100000
RUNS=10
OPTIONS=(records runs)
USAGE="[--records N] [--runs N] [--lattice PATH]"
source "$HERE/common.sh"
STORE="$(mktemp -d)"
trap 'rm -rf "$STORE"' EXIT
S="$STORE/s"
"$L" init --store "$S" >/dev/null
"$L" zone create Movies --store "$S" >/dev/null
# rating 0-999 spread over the names; one movie in 500 a noir; plays unindexed;
# two tags each, one of 1,000 and "all"; a place on a grid of 6,120 points.
perl -e 'for my $i (0..$ARGV[0]-1) { my $r = ($i * 7919) % 1000; my $g = $i % 500 == 0 ? "noir" : "comedy";
  printf "{\"recordName\":\"m%06d\",\"recordType\":\"Movie\",\"fields\":{\"title\":{\"value\":\"title %d\"},\"rating\":{\"value\":%d,\"type\":\"INT64\"},\"genre\":{\"value\":\"%s\"},\"plays\":{\"value\":%d,\"type\":\"INT64\"},\"artist\":{\"value\":\"artist %d\"},\"tags\":{\"value\":[\"t%d\",\"all\"],\"type\":\"STRING_LIST\"},\"place\":{\"value\":{\"latitude\":%.1f,\"longitude\":%.1f},\"type\":\"LOCATION\"}}}\n",
  $i, ($i * 7) % $ARGV[0], $r, $g, $i % 10007, $i % 997, ($i * 13) % 1000, ($i * 31) % 170 - 84.5, ($i * 17) % 360 - 179.5 }' "$RECORDS" | "$L" record import Movies --store "$S" >/dev/null
"$L" schema index Movie rating --queryable --sortable --store "$S" >/dev/null
"$L" schema index Movie title --sortable --store "$S" >/dev/null
"$L" schema index Movie genre --queryable --store "$S" >/dev/null

shape() {
  local where="$1" sort="$2"
  local explain
  export WHERE="$where" SORT="$sort"
  explain="$("$L" query Movie --zone Movies --where "$where" --sort "$sort" --limit 50 --explain --json --store "$S")"
  perl -MTime::HiRes=clock_gettime,CLOCK_MONOTONIC -e '
    my ($runs, $explain, @command) = @ARGV; my @times;
    for (1..$runs) {
      my $start = clock_gettime(CLOCK_MONOTONIC);
      system(@command) == 0 or die "@command failed\n";
      push @times, (clock_gettime(CLOCK_MONOTONIC) - $start) * 1000;
    }
    @times = sort { $a <=> $b } @times;
    my ($records) = $explain =~ /"recordsRead":(\d+)/;
    my ($rows) = $explain =~ /"rowsRead":(\d+)/;
    printf "%8.1f ms  %7d records read  %7s rows  --where %s --sort %s\n", $times[int(@times / 2)], $records, $rows // "-", $ENV{WHERE}, $ENV{SORT};
  ' "$RUNS" "$explain" sh -c "exec \"\$0\" query Movie --zone Movies --where \"\$1\" --sort \"\$2\" --limit 50 --store \"\$3\" >/dev/null" "$L" "$where" "$sort" "$S"
}
echo "$RECORDS records, median of $RUNS runs of the query process (page of 50), $("$L" --version 2>/dev/null || echo "a build without --version")"
shape 'rating >= 990' rating
shape 'rating >= 500' title
shape 'genre = "noir"' rating
shape 'plays >= 10000' artist
# Lists and locations, first without their indexes (as every build before list and location indexes read them), then with.
LIST_SHAPES=('tags CONTAINS "t7"' 'tags ANYBEGINSWITH "t99"' 'place NEAR (10, 20) WITHIN 300000')
for where in "${LIST_SHAPES[@]}"; do shape "$where" rating; done
if "$L" schema index Movie tags --queryable --store "$S" >/dev/null 2>&1 && "$L" schema index Movie place --queryable --store "$S" >/dev/null 2>&1; then
  echo "with tags and place indexed:"
  for where in "${LIST_SHAPES[@]}"; do shape "$where" rating; done
else
  echo "this build cannot index lists or locations"
fi
perl -MTime::HiRes=clock_gettime,CLOCK_MONOTONIC -e '
  my ($runs, @command) = @ARGV; my @times;
  for (1..$runs) { my $start = clock_gettime(CLOCK_MONOTONIC); system(@command) == 0 or die; push @times, (clock_gettime(CLOCK_MONOTONIC) - $start) * 1000 }
  @times = sort { $a <=> $b } @times;
  printf "%8.1f ms  a record get, for scale\n", $times[int(@times / 2)];' "$RUNS" sh -c 'exec "$0" record get Movies/m000001 --store "$1" >/dev/null' "$L" "$S"
