"""Prints N JSON lines of Track records (the merge workload's shape) for
`lattice record import`: used by sync/rss.sh and store/rss.sh."""
import json, random, sys

random.seed(1)
letters = "abcdefghijklmnopqrstuvwxyz"
for i in range(int(sys.argv[1])):
    word = lambda: "".join(random.choice(letters) for _ in range(20))
    print(json.dumps({"recordName": "r%07d" % i, "recordType": "Track", "fields": {
        "title": {"value": word()}, "artist": {"value": word()}, "album": {"value": word()},
        "plays": {"value": i}, "rating": {"value": random.randrange(1000000)}, "score": {"value": i * 0.5 + 0.25},
        "liked": {"value": i % 2 == 0}, "released": {"value": 1700000000000 + i * 1000, "type": "TIMESTAMP"}}}))
