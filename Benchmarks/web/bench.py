#!/usr/bin/env python3
"""The node on the web, measured (release build, loopback, one run):

  query     records/query for a page of 50 of RECORDS records (rating >= 500,
            by rating descending, through the rating index) over HTTP with a
            kept-alive connection, beside the same page through the library
            (lattice-web-figures, in-process) and through the CLI (a process
            per query): p50 and p99.
  modify    records/modify of 400 new records per request, 100 requests, against
            `lattice batch` of the same 40,000 lines: records per second.
  memory    the node's resident memory with and without the HTTP surface, with
            100 event streams open that each received 100 records.
  console   the console's first load (to the zone's records on screen) and a
            live update's latency (save on node A to the row on node B's screen), in
            headless Chromium.

Usage: Benchmarks/web/bench.py [--records N] [--parts query,modify,memory,console]   (needs chromium and chromedriver;
       the Python packages come from .build/web-venv, which Tests/web/run.sh makes)
"""
import argparse
import http.client
import json
import os
import socket
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "Tests", "web"))
import check  # noqa: E402  (the web checks' node helpers)


def percentile(values, fraction):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * fraction))]


def report(figure, **values):
    print(json.dumps({"figure": figure, **values}), flush=True)


PAGE = {"zoneID": {"zoneName": "Movies"}, "resultsLimit": 50, "query": {"recordType": "Movie",
        "filterBy": [{"fieldName": "rating", "comparator": "GREATER_THAN_OR_EQUALS", "fieldValue": {"value": 500, "type": "INT64"}}],
        "sortBy": [{"fieldName": "rating", "ascending": False}]}}
PRIVATE = "/database/1/default/development/private"


def rss(pid):
    fields = {}
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            name, _, value = line.partition(":")
            fields[name] = value.strip()
    return int(fields["VmRSS"].split()[0]) // 1024, int(fields["VmHWM"].split()[0]) // 1024


def fill(store, records):
    check.lattice(store, "init")
    check.lattice(store, "zone", "create", "Movies")
    lines = "".join(json.dumps({"operationType": "forceReplace", "record": {"recordName": f"m{i}", "recordType": "Movie", "fields": {
        "title": {"value": f"Movie {i}"}, "rating": {"value": i % 1000, "type": "INT64"}}}}) + "\n" for i in range(records))
    subprocess.run([check.LATTICE, "batch", "--zone", "Movies", "--store", os.path.join(check.ROOT, store)], input=lines, text=True,
                   stdout=subprocess.DEVNULL, check=True)
    check.lattice(store, "schema", "index", "Movie", "rating", "--queryable", "--sortable")


def query_figures(node, records, figures_tool):
    connection = http.client.HTTPConnection("127.0.0.1", node.http_port)
    headers = {"Authorization": f"Bearer {node.token}", "Content-Type": "application/json"}
    body = json.dumps(PAGE)
    times = []
    for index in range(550):
        start = time.perf_counter()
        connection.request("POST", f"{PRIVATE}/records/query", body, headers)
        page = json.loads(connection.getresponse().read())
        took = (time.perf_counter() - start) * 1000
        assert len(page["records"]) == 50, page
        if index >= 50:
            times.append(took)
    report("records/query over HTTP", records=records, p50_ms=round(percentile(times, 0.5), 3), p99_ms=round(percentile(times, 0.99), 3), runs=len(times))
    library = subprocess.run([figures_tool, os.path.join(check.ROOT, node.store), "500"], capture_output=True, text=True, check=True)
    print(library.stdout.strip(), flush=True)
    cli = []
    for _ in range(50):
        start = time.perf_counter()
        subprocess.run([check.LATTICE, "query", "Movie", "--zone", "Movies", "--where", "rating >= 500", "--sort", "-rating", "--limit", "50", "--json",
                        "--store", os.path.join(check.ROOT, node.store)], stdout=subprocess.DEVNULL, check=True)
        cli.append((time.perf_counter() - start) * 1000)
    report("lattice query (a process each)", records=records, p50_ms=round(percentile(cli, 0.5), 3), p99_ms=round(percentile(cli, 0.99), 3), runs=len(cli))


def modify_figures(node):
    connection = http.client.HTTPConnection("127.0.0.1", node.http_port)
    headers = {"Authorization": f"Bearer {node.token}", "Content-Type": "application/json"}
    rates = []
    for run in range(3):
        zone = f"Http{run}"
        check.lattice(node.store, "zone", "create", zone)
        bodies = [json.dumps({"zoneID": {"zoneName": zone}, "operations": [{"operationType": "create", "record": {
            "recordName": f"r{request}-{i}", "recordType": "Movie", "fields": {"title": {"value": f"Title {i}"}, "rating": {"value": i, "type": "INT64"}}}}
            for i in range(400)]}) for request in range(100)]
        start = time.perf_counter()
        for body in bodies:
            connection.request("POST", f"{PRIVATE}/records/modify", body, headers)
            response = connection.getresponse()
            data = response.read()
            # Checked without parsing: the client's own JSON work is not the server's figure.
            assert response.status == 200 and b"serverErrorCode" not in data, data[:300]
        rates.append(40_000 / (time.perf_counter() - start))
    report("records/modify, 400 per request", records=40_000, records_per_second=round(sorted(rates)[1]), runs=3)
    batch_rates = []
    for run in range(3):
        zone = f"Batch{run}"
        check.lattice(node.store, "zone", "create", zone)
        lines = "".join(json.dumps({"operationType": "create", "record": {"recordName": f"r{i}", "recordType": "Movie", "fields": {
            "title": {"value": f"Title {i}"}, "rating": {"value": i % 400, "type": "INT64"}}}}) + "\n" for i in range(40_000))
        start = time.perf_counter()
        subprocess.run([check.LATTICE, "batch", "--zone", zone, "--store", os.path.join(check.ROOT, node.store)], input=lines, text=True,
                       stdout=subprocess.DEVNULL, check=True)
        batch_rates.append(40_000 / (time.perf_counter() - start))
    report("lattice batch, the same 40,000 creates", records=40_000, records_per_second=round(sorted(batch_rates)[1]), runs=3)


def memory_figures(store, token):
    plain = subprocess.Popen([check.LATTICE, "serve", "--port", "0", "--listen", "127.0.0.1", "--no-mdns", "--store", os.path.join(check.ROOT, store)],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(4)
    without = rss(plain.pid)
    plain.terminate()
    plain.wait()
    node = check.Node(store)
    node.token = token
    streams = []
    for _ in range(100):
        stream = socket.create_connection(("127.0.0.1", node.http_port))
        stream.sendall(f"GET {PRIVATE}/events?zone=Movies HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {token}\r\n\r\n".encode())
        streams.append(stream)
    time.sleep(1)
    node.post(f"{PRIVATE}/records/modify", {"zoneID": {"zoneName": "Movies"}, "operations": [
        {"operationType": "forceReplace", "record": {"recordName": f"stream-{i}", "recordType": "Movie", "fields": {"title": {"value": f"S{i}"}}}} for i in range(100)]})
    received = 0
    deadline = time.time() + 20
    for stream in streams:
        stream.settimeout(max(0.1, deadline - time.time()))
        data = b""
        try:
            while data.count(b"event: record") < 100:
                chunk = stream.recv(1 << 20)
                if not chunk:
                    break
                data += chunk
        except socket.timeout:
            pass
        received += data.count(b"event: record") >= 100
    with_http = rss(node.process.pid)
    for stream in streams:
        stream.close()
    node.stop()
    report("node memory", without_http_rss_mb=without[0], without_http_peak_mb=without[1], with_http_100_streams_rss_mb=with_http[0],
           with_http_100_streams_peak_mb=with_http[1], streams_that_got_all_100_records=received)


def console_figures():
    from selenium import webdriver
    from selenium.webdriver.common.by import By
    a_id = check.lattice("ca", "init") and check.lattice("ca", "id")
    b_id = check.lattice("cb", "init") and check.lattice("cb", "id")
    check.lattice("ca", "trust", b_id)
    check.lattice("cb", "trust", a_id)
    check.lattice("ca", "zone", "create", "Movies")
    check.lattice("ca", "record", "save", "Movies/toy", "--type", "Movie", "title=Toy Story")
    tokens = {store: check.lattice(store, "http", "token", "create", "bench") for store in ("ca", "cb")}
    a = check.Node("ca")
    b = check.Node("cb", peers=[a.port])
    a.token, b.token = tokens["ca"], tokens["cb"]
    options = webdriver.ChromeOptions()
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1400,900", "--disable-gpu"):
        options.add_argument(argument)
    driver = webdriver.Chrome(options=options, service=webdriver.ChromeService(executable_path="/usr/bin/chromedriver"))
    try:
        check.eventually(lambda: "toy" in check.lattice("cb", "query", "Movie", "--zone", "Movies", "--json"))
        loads = []
        for _ in range(10):
            driver.get("about:blank")
            start = time.perf_counter()
            driver.get(f"http://127.0.0.1:{b.http_port}/console/#token={b.token}")
            assert check.eventually(lambda: driver.find_elements(By.CSS_SELECTOR, '#records tr[data-record="toy"]'), 20)
            loads.append((time.perf_counter() - start) * 1000)
        report("console first load (to the zone's records on screen)", p50_ms=round(percentile(loads, 0.5)), max_ms=round(max(loads)), runs=len(loads))
        # The row's arrival is timed in the page (a MutationObserver, Date.now()), not by polling through WebDriver.
        driver.execute_script("""
            window.arrived = {};
            new MutationObserver(() => {
                for (const row of document.querySelectorAll('#records tr[data-record^="live-"]')) {
                    if (!(row.dataset.record in window.arrived)) window.arrived[row.dataset.record] = Date.now();
                }
            }).observe(document.getElementById('records'), { childList: true, subtree: true });""")
        latencies = []
        for i in range(100):
            saved = time.time() * 1000
            a.post(f"{PRIVATE}/records/modify", {"zoneID": {"zoneName": "Movies"}, "operations": [
                {"operationType": "create", "record": {"recordName": f"live-{i}", "recordType": "Movie", "fields": {"title": {"value": f"Live {i}"}}}}]})
            arrived = None
            deadline = time.time() + 20
            while arrived is None and time.time() < deadline:
                arrived = driver.execute_script(f"return window.arrived['live-{i}'] || null;")
                if arrived is None:
                    time.sleep(0.01)
            assert arrived is not None, f"live-{i} did not arrive"
            latencies.append(arrived - saved)
        report("live update (save over HTTP on A to the row on B's screen)", p50_ms=round(percentile(latencies, 0.5)), p99_ms=round(percentile(latencies, 0.99)),
               runs=len(latencies))
    finally:
        driver.quit()
        a.stop()
        b.stop()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--parts", default="query,modify,memory,console", help="which figures, comma-separated")
    arguments = parser.parse_args()
    records = arguments.records
    parts = set(arguments.parts.split(","))
    subprocess.run(["swift", "build", "-c", "release", "--product", "lattice"], cwd=REPO, check=True, stdout=subprocess.DEVNULL)
    subprocess.run(["swift", "build", "-c", "release", "--product", "lattice-web-figures"], cwd=os.path.join(REPO, "Benchmarks"), check=True, stdout=subprocess.DEVNULL)
    check.configure(os.path.join(REPO, ".build", "release", "lattice"))
    figures_tool = os.path.join(REPO, "Benchmarks", ".build", "release", "lattice-web-figures")
    try:
        fill("big", records)
        token = check.lattice("big", "http", "token", "create", "bench")
        node = check.Node("big")
        node.token = token
        try:
            if "query" in parts:
                query_figures(node, records, figures_tool)
            if "modify" in parts:
                modify_figures(node)
        finally:
            node.stop()
        if "memory" in parts:
            memory_figures("big", token)
        if "console" in parts:
            console_figures()
    finally:
        check.clean_up()


if __name__ == "__main__":
    main()
