#!/usr/bin/env bash
# Sync by files, as a CLI session: two stores (a laptop and a phone) edit the
# same records concurrently, exchange bundles as files, and converge.
set -euo pipefail
source "$(dirname "$0")/demo-common.sh"
trap 'rm -rf "$work"' EXIT

run init --name laptop "${laptop[@]}"
run init --name phone "${phone[@]}"
run zone create Movies "${laptop[@]}"
run record save Movies/toy-story --type Movie 'title=Toy Story' rating:int=4 released:date=1995-11-22T00:00:00Z tags:string-list=pixar,toys "${laptop[@]}"
run record save Movies/up --type Movie title=Up rating:int=5 "${laptop[@]}"

echo; echo "# The phone asks for what it lacks: its vector goes to the laptop, a bundle comes back."
say "lattice vector --json --store phone > phone.json"; "$lattice" vector --json "${phone[@]}" > "$work/phone.json"
run bundle create -o "$work/to-phone.ltb" --since "$work/phone.json" "${laptop[@]}"
run bundle apply "$work/to-phone.ltb" "${phone[@]}"

echo; echo "# Offline, both edit toy-story; the phone deletes up while the laptop edits it."
run record save Movies/toy-story --type Movie rating=5 'title=Toy Story (1995)' "${laptop[@]}"
run record save Movies/toy-story --type Movie rating=3 'note=watch with the kids' "${phone[@]}"
run record save Movies/up --type Movie rating=1 "${laptop[@]}"
run record delete Movies/up "${phone[@]}"

echo; echo "# Bundles both ways."
"$lattice" vector --json "${phone[@]}" > "$work/phone.json"
"$lattice" vector --json "${laptop[@]}" > "$work/laptop.json"
run bundle create -o "$work/to-phone.ltb" --since "$work/phone.json" "${laptop[@]}"
run bundle create -o "$work/to-laptop.ltb" --since "$work/laptop.json" "${phone[@]}"
run bundle apply "$work/to-phone.ltb" "${phone[@]}"
run bundle apply "$work/to-laptop.ltb" "${laptop[@]}"

echo; echo "# Converged: the same query answer on both, per field the later write, the delete won."
run query Movie --zone Movies --sort title "${laptop[@]}"
run query Movie --zone Movies --sort title "${phone[@]}"
expect_converged Movies/toy-story
echo; echo "# The losing value travels with the record: both stores show the same conflict."
run conflicts Movies/toy-story "${phone[@]}"
run conflicts Movies/toy-story "${laptop[@]}"

echo; echo "# Resolving is a write like any other: cleared on the phone, gone on the laptop after the next bundle."
run conflicts Movies/toy-story --clear "${phone[@]}"
"$lattice" vector --json "${laptop[@]}" > "$work/laptop.json"
run bundle create -o "$work/cleared.ltb" --since "$work/laptop.json" "${phone[@]}"
run bundle apply "$work/cleared.ltb" "${laptop[@]}"
run conflicts Movies/toy-story "${laptop[@]}"
