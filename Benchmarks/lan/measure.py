"""Timings of Lattice on the simulated LAN, driven from outside the hosts.

Run by Benchmarks/lan/run.sh once the hosts are up and their stores trust each
other (LAN_TAG, LAN_DIR, LATTICE and HOSTS in the environment). It starts
`lattice serve --json` on every host, with no --peer, and timestamps every
event line as it arrives, so no figure depends on polling.

  discovery  a node starts until every other node reports it connected
  cold       all nodes start at once until each reports every other connected
  propagate  `lattice record save` starts on h1 until `lattice watch` on h2
             prints the record (watch sees each commit as it lands)
  bulk       `lattice record import` of N records on h1 until `watch` on every
             other host has printed all N
  fanout     one save on h1 until every other host has it, and the CPU time
             all nodes spend per commit
  asset      an asset of N MiB saved on h1 until h2's `lattice asset fetch`
             returns (its node fetched it, checked and on disk), with both
             nodes' peak RSS
Prints one JSON line per figure.
"""
import json, os, signal, statistics, subprocess, sys, threading, time

TAG, DIR, LATTICE = os.environ["LAN_TAG"], os.environ["LAN_DIR"], os.environ["LATTICE"]
HOSTS = int(os.environ["HOSTS"])


def on(k, *command):
    """The argv that runs `command` on host k (its own /run/dbus and /run/avahi-daemon)."""
    return ["ip", "netns", "exec", f"{TAG}h{k}", "sh", "-c",
            'mount -n --bind "$0/dbus" /run/dbus && mount -n --bind "$0/avahi" /run/avahi-daemon && exec "$@"',
            f"{DIR}/h{k}/run", *command]


def lattice(k, *arguments, **kwargs):
    return subprocess.run(on(k, LATTICE, *arguments, "--store", f"{DIR}/h{k}/store"), check=True, capture_output=True, text=True, **kwargs)


class Lines:
    """A process whose stdout lines are kept with the time each arrived."""

    def __init__(self, argv):
        self.process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, bufsize=1)
        self.lines, self.cond = [], threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.process.stdout:
            with self.cond:
                self.lines.append((time.monotonic(), line))
                self.cond.notify_all()

    def wait_for(self, predicate, after=0.0, timeout=60.0):
        """The arrival time of the first line after `after` that satisfies `predicate`."""
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                for stamp, line in self.lines:
                    if stamp >= after and predicate(line):
                        return stamp
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError("no matching line")
                self.cond.wait(left)

    def count_after(self, after, predicate):
        with self.cond:
            return sum(1 for stamp, line in self.lines if stamp >= after and predicate(line))

    def stop(self):
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()


def event(name, peer=None):
    def match(line):
        try:
            e = json.loads(line)
        except ValueError:
            return False
        return e.get("event") == name and (peer is None or e.get("peer") == peer)
    return match


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def percentile(values, p):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def summary(figure, samples, **extra):
    ms = [s * 1000 for s in samples]
    print(json.dumps({"figure": figure, "samples": len(ms), "p50_ms": round(percentile(ms, 50), 1),
                      "p99_ms": round(percentile(ms, 99), 1), "max_ms": round(max(ms), 1), **extra}), flush=True)


ids = {k: lattice(k, "id").stdout.strip() for k in range(1, HOSTS + 1)}
nodes = {}


def serve(k):
    nodes[k] = Lines(on(k, LATTICE, "serve", "--json", "--store", f"{DIR}/h{k}/store"))
    nodes[k].wait_for(event("listening"))


def all_connected(timeout=60):
    for k in nodes:
        for j in nodes:
            if j != k:
                nodes[k].wait_for(event("connected", ids[j]), timeout=timeout)


def discovery(runs):
    samples, last = [], HOSTS
    for _ in range(runs):
        nodes[last].stop()
        gone = time.monotonic()
        for k in range(1, last):  # goodbyes seen: the next start is a fresh discovery
            nodes[k].wait_for(event("vanished", ids[last]), after=gone - 1, timeout=20)
        time.sleep(0.3)
        started = time.monotonic()
        serve(last)
        arrived = [nodes[k].wait_for(event("connected", ids[last]), after=started, timeout=30) for k in range(1, last)]
        samples.append(max(arrived) - started)
        for k in range(1, last):  # its advertisement is up too, so the next stop withdraws one
            nodes[k].wait_for(event("discovered", ids[last]), after=started, timeout=20)
    summary("discovery: node start until every other node lists it connected", samples, hosts=HOSTS)


def cold(runs):
    """Every node stops, then all start at once: until each lists every other connected."""
    samples = []
    for _ in range(runs):
        for node in nodes.values():
            node.stop()
        time.sleep(2.0)  # goodbyes sent and seen by every daemon
        started = time.monotonic()
        for k in range(1, HOSTS + 1):
            nodes[k] = Lines(on(k, LATTICE, "serve", "--json", "--store", f"{DIR}/h{k}/store"))
        arrived = [nodes[k].wait_for(event("connected", ids[j]), after=started, timeout=30)
                   for k in nodes for j in nodes if j != k]
        samples.append(max(arrived) - started)
    summary("discovery, all nodes starting at once: until every node lists every other connected", samples, hosts=HOSTS)


def watchers(zone, hosts):
    watching = {k: Lines(on(k, LATTICE, "watch", zone, "--store", f"{DIR}/h{k}/store")) for k in hosts}
    time.sleep(1.0)  # watch is up
    return watching


def propagate(saves):
    lattice(1, "zone", "create", "Bench")
    time.sleep(1.0)
    watching = watchers("Bench", [2])
    samples, process = [], []
    for i in range(saves):
        name = f"p{i:05d}"
        began = time.monotonic()
        subprocess.run(on(1, LATTICE, "record", "save", f"Bench/{name}", "--type", "Note", f"title=save {i}", "--store", f"{DIR}/h1/store"),
                       check=True, capture_output=True)
        process.append(time.monotonic() - began)
        samples.append(watching[2].wait_for(lambda line: f'"{name}"' in line, after=began, timeout=10) - began)
        time.sleep(0.02)
    summary("propagation: `lattice record save` on h1 starts until visible on h2", samples, hosts=HOSTS,
            save_process_p50_ms=round(statistics.median(process) * 1000, 1))
    for w in watching.values():
        w.stop()


def zone_count(k, zone):
    status = json.loads(lattice(k, "status", "--json").stdout)
    return sum(z["recordCount"] for z in status["zones"] if z["zoneID"]["zoneName"] == zone)


def bulk(records):
    """Arrival is polled with `lattice status` (a process per look, ~15 ms apart):
    a watcher printing every record would be the slowest part."""
    lattice(1, "zone", "create", "Bulk")
    time.sleep(1.0)
    others = list(range(2, HOSTS + 1))
    lines = "".join(json.dumps({"recordName": f"item-{i:05d}", "recordType": "Item",
                                "fields": {"title": {"value": f"item {i}"}, "rank": {"value": i}}}) + "\n" for i in range(records))
    began = time.monotonic()
    importing = subprocess.Popen(on(1, LATTICE, "record", "import", "Bulk", "-", "--store", f"{DIR}/h1/store"),
                                 stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    importing.communicate(lines)
    imported = time.monotonic()
    waiting, deadline = set(others), time.monotonic() + 60
    while waiting:
        if time.monotonic() > deadline:
            raise TimeoutError("bulk records did not arrive")
        waiting = {k for k in waiting if zone_count(k, "Bulk") < records}
    arrived = time.monotonic()
    print(json.dumps({"figure": f"{records} records imported on h1 until on every other host", "hosts": HOSTS,
                      "import_s": round(imported - began, 3), "after_import_s": round(arrived - imported, 3),
                      "total_s": round(arrived - began, 3)}), flush=True)


def fanout(saves):
    lattice(1, "zone", "create", "Fan")
    time.sleep(1.0)
    others = list(range(2, HOSTS + 1))
    watching = watchers("Fan", others)
    before = {k: cpu_seconds(nodes[k].process.pid) for k in nodes}
    samples = []
    for i in range(saves):
        name = f"f{i:05d}"
        began = time.monotonic()
        lattice(1, "record", "save", f"Fan/{name}", "--type", "Note", f"title=save {i}")
        samples.append(max(watching[k].wait_for(lambda line: f'"{name}"' in line, after=began, timeout=20) for k in others) - began)
        time.sleep(0.05)
    cpu = {k: cpu_seconds(nodes[k].process.pid) - before[k] for k in nodes}
    summary("fanout: one save on h1 until on every other host", samples, hosts=HOSTS,
            sender_cpu_ms_per_commit=round(cpu[1] / saves * 1000, 2),
            all_nodes_cpu_ms_per_commit=round(sum(cpu.values()) / saves * 1000, 2))
    for w in watching.values():
        w.stop()


def peak_rss_mb(pid):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return round(int(line.split()[1]) / 1024, 1)
    return None


def asset(megabytes):
    """A MEGABYTES MiB asset saved on h1, fetched by h2's node on `lattice asset fetch`."""
    path = f"{DIR}/asset.bin"
    with open(path, "wb") as out:
        for _ in range(megabytes):
            out.write(os.urandom(1 << 20))
    lattice(1, "zone", "create", "Big")
    lattice(1, "record", "save", "Big/film", "--type", "Film", f"content:asset={path}")
    deadline = time.monotonic() + 60
    while subprocess.run(on(2, LATTICE, "record", "get", "Big/film", "--store", f"{DIR}/h2/store"), capture_output=True).returncode != 0:
        if time.monotonic() > deadline:
            raise TimeoutError("the record did not reach h2")
        time.sleep(0.05)
    began = time.monotonic()
    lattice(2, "asset", "fetch", "Big/film", "--timeout", "600")
    seconds = time.monotonic() - began
    os.remove(path)
    print(json.dumps({"figure": "an asset fetched from h1 by h2's node on the simulated LAN", "mebibytes": megabytes,
                      "seconds": round(seconds, 3), "MB_per_s": round(megabytes * 1048576 / seconds / 1e6, 1),
                      "peak_rss_MB_h1": peak_rss_mb(nodes[1].process.pid), "peak_rss_MB_h2": peak_rss_mb(nodes[2].process.pid)}), flush=True)


def main():
    jobs = sys.argv[1:]
    try:
        for k in range(1, HOSTS + 1):
            serve(k)
        all_connected()
        for job in jobs:
            name, _, count = job.partition("=")
            {"discovery": discovery, "cold": cold, "propagate": propagate, "bulk": bulk, "fanout": fanout, "asset": asset}[name](int(count))
    finally:
        for node in nodes.values():
            node.stop()


main()
