#!/usr/bin/env python3
"""The node on the web, from outside: real `lattice serve --http` processes on
loopback, checked with the tools their users have.

  metrics   /metrics parsed by prometheus_client's parser: counters move when
            records are saved and synced, the propagation histogram has samples.
  openapi   schemathesis fuzzes the published OpenAPI document: no 5xx; in its
            negative mode every request is refused and the store is unchanged.
  console   the console in headless Chromium (Selenium): load, list a zone, open
            a record, run a query and explain it, see a change from another node
            arrive live, see a peer disconnect; screenshots in ARTIFACTS/console.

Usage: check.py LATTICE [ARTIFACTS]   (exits 1 when a check fails)
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

LATTICE = None      # the binary under test (configure)
ROOT = None         # a temporary directory for the stores (configure)
failures = []


def configure(lattice):
    """Names the binary and makes the stores' directory (Benchmarks/web/bench.py uses these helpers too)."""
    global LATTICE, ROOT
    LATTICE = os.path.abspath(lattice)
    ROOT = tempfile.mkdtemp(prefix="lattice-web-")


def clean_up():
    shutil.rmtree(ROOT, ignore_errors=True)


def check(condition, what):
    print(("ok   " if condition else "FAIL ") + what, flush=True)
    if not condition:
        failures.append(what)
    return condition


def lattice(store, *arguments, check_status=True):
    result = subprocess.run([LATTICE, *arguments, "--store", os.path.join(ROOT, store)], capture_output=True, text=True)
    if check_status and result.returncode != 0:
        raise RuntimeError(f"lattice {' '.join(arguments)}: {result.stderr.strip()}")
    return result.stdout.strip()


def eventually(condition, seconds=20.0):
    deadline = time.time() + seconds
    while time.time() < deadline:
        try:
            if condition():
                return True
        except Exception:
            pass
        time.sleep(0.05)
    return False


class Node:
    """`lattice serve --json --http 0` on a store, its event lines read as they come."""

    def __init__(self, store, peers=()):
        self.store = store
        self.events = []
        arguments = [LATTICE, "serve", "--port", "0", "--listen", "127.0.0.1", "--no-mdns", "--json", "--http", "0",
                     "--store", os.path.join(ROOT, store)]
        for port in peers:
            arguments += ["--peer", f"127.0.0.1:{port}"]
        self.process = subprocess.Popen(arguments, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        threading.Thread(target=self._read, daemon=True).start()
        if not eventually(lambda: self.port and self.http_port, 20):
            self.stop()
            raise RuntimeError(f"the node on {store} did not start")
        self.token = None

    def _read(self):
        for line in self.process.stdout:
            try:
                self.events.append(json.loads(line))
            except ValueError:
                pass

    def _first(self, name, key):
        return next((event[key] for event in list(self.events) if event.get("event") == name), None)

    @property
    def port(self):
        return self._first("listening", "port")

    @property
    def http_port(self):
        return self._first("httpListening", "port")

    def count(self, name):
        return sum(1 for event in list(self.events) if event.get("event") == name)

    def get(self, path):
        request = urllib.request.Request(f"http://127.0.0.1:{self.http_port}{path}", headers={"Authorization": f"Bearer {self.token}"})
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.read().decode()

    def post(self, path, body):
        request = urllib.request.Request(f"http://127.0.0.1:{self.http_port}{path}", data=json.dumps(body).encode(),
                                         headers={"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=10) as response:
            return json.loads(response.read())

    def stop(self):
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.process.kill()


def metric_values(text, name):
    from prometheus_client.parser import text_string_to_metric_families
    values = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name:
                values[tuple(sorted(sample.labels.items()))] = sample.value
    return values


def check_metrics(a, b):
    private = "/database/1/default/development/private"
    before_a = sum(metric_values(a.get("/metrics"), "lattice_commits_total").values())
    before_b = sum(metric_values(b.get("/metrics"), "lattice_records_merged_total").values())
    a.post(f"{private}/records/modify", {"zoneID": {"zoneName": "Movies"}, "operations": [
        {"operationType": "create", "record": {"recordName": f"metric-{i}", "recordType": "Movie", "fields": {"title": {"value": f"M{i}"}}}} for i in range(5)]})
    check(eventually(lambda: sum(metric_values(b.get("/metrics"), "lattice_records_merged_total").values()) >= before_b + 5),
          "metrics: the other node's lattice_records_merged_total moved by the 5 records synced")
    check(sum(metric_values(a.get("/metrics"), "lattice_commits_total").values()) > before_a, "metrics: lattice_commits_total moved on the node that saved")
    text = b.get("/metrics")
    check(sum(metric_values(text, "lattice_propagation_seconds_count").values()) >= 5, "metrics: the propagation histogram has samples")
    buckets = metric_values(text, "lattice_propagation_seconds_bucket")
    check(any(dict(labels).get("le") == "+Inf" for labels in buckets), "metrics: the histogram has its +Inf bucket")
    received = {labels: value for labels, value in metric_values(text, "lattice_sync_records_total").items() if dict(labels).get("direction") == "receiving"}
    check(sum(received.values()) >= 5, "metrics: lattice_sync_records_total counts the records received, per peer")
    check(sum(metric_values(text, "lattice_connections_total").values()) >= 1, "metrics: lattice_connections_total counts the session")
    check(all(name.startswith("lattice_") for name in (family.name for family in __import__("prometheus_client.parser").parser.text_string_to_metric_families(text))),
          "metrics: every metric is named lattice_…")


def check_openapi(node):
    schemathesis = shutil.which("schemathesis") or os.path.join(os.path.dirname(sys.executable), "schemathesis")
    url = f"http://127.0.0.1:{node.http_port}/openapi.json"
    base = f"http://127.0.0.1:{node.http_port}"
    common = [schemathesis, "run", url, "--url", base, "-H", f"Authorization: Bearer {node.token}", "--seed", "41", "--no-shrink",
              "--exclude-path-regex", "/events$", "--request-timeout", "10", "--warnings", "off", "--suppress-health-check", "all"]
    # Run from the temporary directory: schemathesis leaves its reports where it runs.
    positive = subprocess.run(common + ["--mode", "positive", "--max-examples", "25", "--checks", "not_a_server_error"], capture_output=True, text=True, cwd=ROOT)
    check(positive.returncode == 0, "openapi: schemathesis' valid requests get no 5xx")
    if positive.returncode != 0:
        print(positive.stdout[-4000:])
    snapshot = lattice(node.store, "query", "Movie", "--zone", "Movies", "--json", "--limit", "400"), lattice(node.store, "zone", "list", "--json")
    negative = subprocess.run(common + ["--mode", "negative", "--max-examples", "25", "--checks", "not_a_server_error,negative_data_rejection"],
                              capture_output=True, text=True, cwd=ROOT)
    check(negative.returncode == 0, "openapi: schemathesis' invalid requests are all refused, none with a 5xx")
    if negative.returncode != 0:
        print(negative.stdout[-4000:])
    after = lattice(node.store, "query", "Movie", "--zone", "Movies", "--json", "--limit", "400"), lattice(node.store, "zone", "list", "--json")
    check(after == snapshot, "openapi: the refused requests changed no stored record or zone")


def check_console(a, b, artifacts):
    from selenium import webdriver
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select
    shots = os.path.join(artifacts, "console")
    os.makedirs(shots, exist_ok=True)
    options = webdriver.ChromeOptions()
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1400,900", "--disable-gpu"):
        options.add_argument(argument)
    chromium = shutil.which("chromium")
    if chromium:
        options.binary_location = chromium
    service = webdriver.ChromeService(executable_path=shutil.which("chromedriver") or "/usr/bin/chromedriver")
    driver = webdriver.Chrome(options=options, service=service)
    figures = {}
    try:
        def shot(name):
            driver.save_screenshot(os.path.join(shots, f"{name}.png"))

        def find(selector):
            return driver.find_element(By.CSS_SELECTOR, selector)

        def wait_for(condition, what, seconds=20):
            return check(eventually(condition, seconds), what)

        started = time.time()
        driver.get(f"http://127.0.0.1:{b.http_port}/console/#token={b.token}")
        wait_for(lambda: driver.find_element(By.TAG_NAME, "body").get_attribute("data-ready") == "true", "console: loads and opens with the token")
        figures["first load (ms, to the zone's records on screen)"] = round((time.time() - started) * 1000)
        wait_for(lambda: find('#zones a[data-zone="Movies"]'), "console: lists zone Movies")
        find('#zones a[data-zone="Movies"]').click()
        wait_for(lambda: find('#records tr[data-record="toy"]'), "console: lists the zone's records")
        shot("1-records")
        find('#records tr[data-record="toy"]').click()
        wait_for(lambda: "Toy Story" in find("#record-fields").text and find('#record-fields tr[data-field="title"]'), "console: opens a record with its fields and writers")
        shot("2-record")
        find('[data-tab="query"]').click()
        find("#query-type").send_keys("Movie")
        find("#query-where").send_keys("rating >= 4")
        find("#query-sort").send_keys("-rating")
        find("#run-query").click()
        wait_for(lambda: [row.get_attribute("data-record") for row in driver.find_elements(By.CSS_SELECTOR, "#query-results tbody tr")] == ["toy", "up"],
                 "console: runs a query in the CLI's predicate language")
        find("#explain-query").click()
        wait_for(lambda: "plan:" in find("#query-explain").text, "console: shows the planner's explanation")
        shot("3-query")

        # A change on the other node arrives live.
        find('#zones a[data-zone="Movies"]').click()
        wait_for(lambda: find('#records tr[data-record="toy"]'), "console: back on the zone")
        latencies = []
        for i in range(10):
            name = f"live-{i}"
            saved = time.time()
            a.post("/database/1/default/development/private/records/modify", {"zoneID": {"zoneName": "Movies"}, "operations": [
                {"operationType": "create", "record": {"recordName": name, "recordType": "Movie", "fields": {"title": {"value": f"Live {i}"}}}}]})
            arrived = eventually(lambda: driver.find_elements(By.CSS_SELECTOR, f'#records tr[data-record="{name}"]'), 20)
            if not arrived:
                break
            latencies.append((time.time() - saved) * 1000)
        check(len(latencies) == 10, "console: changes saved on another node appear live, each of 10")
        if latencies:
            latencies.sort()
            figures["live update (ms, save on A to the row on B's screen), p50"] = round(latencies[len(latencies) // 2])
            figures["live update, max of 10"] = round(latencies[-1])
        shot("4-live")

        find('[data-tab="peers"]').click()
        wait_for(lambda: find('#peers tr[data-state="connected"]'), "console: shows the peer connected")
        shot("5-peers")
        a.stop()
        wait_for(lambda: find('#peers tr[data-state="disconnected"]'), "console: shows the peer disconnected", 30)
        shot("6-peer-gone")
        for tab in ("schema", "account", "assets", "activity"):
            find(f'[data-tab="{tab}"]').click()
            time.sleep(0.3)
            shot(f"7-{tab}")
        check(driver.find_elements(By.CSS_SELECTOR, "#schema .schema-type") != [], "console: shows the schema")
        logs = [entry for entry in driver.get_log("browser") if entry.get("level") == "SEVERE"]
        check(not logs, "console: no error in the browser's console" + (f": {logs[:3]}" if logs else ""))
    finally:
        driver.quit()
    return figures


def main():
    configure(sys.argv[1])
    artifacts = os.path.abspath(sys.argv[2] if len(sys.argv) > 2 else ".build/artifacts")
    nodes = []
    try:
        a_id = (lattice("a", "init") and lattice("a", "id"))
        b_id = (lattice("b", "init") and lattice("b", "id"))
        lattice("a", "trust", b_id)
        lattice("b", "trust", a_id)
        lattice("a", "zone", "create", "Movies")
        for name, title, rating in (("toy", "Toy Story", 5), ("up", "Up", 4), ("cars", "Cars", 3)):
            lattice("a", "record", "save", f"Movies/{name}", "--type", "Movie", f"title={title}", f"rating:int={rating}")
        tokens = {store: lattice(store, "http", "token", "create", "checks") for store in ("a", "b")}
        a = Node("a")
        nodes.append(a)
        b = Node("b", peers=[a.port])
        nodes.append(b)
        a.token, b.token = tokens["a"], tokens["b"]
        check(eventually(lambda: "toy" in lattice("b", "query", "Movie", "--zone", "Movies", "--json")), "setup: the two nodes sync")
        check_metrics(a, b)
        check_openapi(a)
        figures = check_console(a, b, artifacts)
        for name, value in figures.items():
            print(f"figure: {name}: {value}")
    finally:
        for node in nodes:
            node.stop()
        clean_up()
    print(f"web checks: {len(failures)} failed" if failures else "web checks: all passed")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
