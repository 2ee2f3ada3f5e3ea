#!/usr/bin/python3
"""tests/integration/test_client.py - examples/python/dnnsat_client.py:

  1. against the REAL daemon: every method once (catalogs, estimate, check
     without a reduction, reduce, pages and the cursor walk, the JSON-lines
     stream, seeded samples, check by GET and by POST, explain, max, min,
     heatmap), and errors raised as DnnsatError with status, problem type,
     detail and path (422, 404, 400);
  2. against a scripted HTTP server (standard library): 429 and 503 retried
     after Retry-After, a 202 reduction polled until exact, the bearer
     token sent, one connection kept across calls and reopened when the
     server closes it, a non-JSON error body.

Prints "N passed, M failed"; exit 1 on any failure.
"""
import http.server
import json
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

from dnnsat_client import DnnsatClient, DnnsatError  # noqa: E402

T = harness.Tally("test_client")


def expect_error(fn, status, problem=None, path=None):
    """Calls fn; checks it raises DnnsatError with that status (problem, path)."""
    try:
        fn()
    except DnnsatError as e:
        T.check(e.status == status, "status %s, wanted %s: %s" % (e.status, status, e))
        if problem:
            T.check(e.problem == problem, "problem %r, wanted %r" % (e.problem, problem))
        if path:
            T.check(e.path == path, "path %r, wanted %r" % (e.path, path))
        T.check(bool(e.detail) and str(e).startswith("HTTP %d" % status), "a message with the detail: %s" % e)
        return e
    T.check(False, "no DnnsatError (wanted %s)" % status)
    return None


def test_real(client):
    T.check(client.health() == {"status": "ok"}, "healthz")
    T.check(any(t["name"] == "resnet" for t in client.templates()), "templates lists resnet")
    T.check(client.templates("resnet")["name"] == "resnet", "one template")
    T.check(any(d["name"] == "a100-40gb" for d in client.devices()), "devices lists the A100 40 GB")
    est = client.estimate("resnet50", {"batch_size": 64, "resolution": 224}, device="a100-40gb")
    T.check(est["costs"]["memory"]["peak_bytes"] > 0, "estimate gives a memory peak")

    query = harness.resnet_query(budget="2.5GiB")    # 334 fit: walking them all stays quick
    config = {"batch_size": 512, "block": "bottleneck", "layers3": 23, "width": 128, "resolution": 320, "lr": 0.01}
    T.check(client.check_query(query, config)["feasible"] is False, "check without a reduction: the largest does not fit")
    status, red = client.create_reduction(query)
    T.check(status in (200, 201) and red["status"] == "exact", "create_reduction: %s %s" % (status, red["status"]))
    T.check(client.reduce(query)["id"] == red["id"], "reduce: the same id")
    rid, feasible = red["id"], int(red["feasible"])
    T.check(client.reduction(rid)["feasible"] == red["feasible"], "reduction(id)")

    page = client.configurations(rid, limit=7)
    T.check(len(page["items"]) == 7 and page["next_cursor"], "a page of 7 with a cursor")
    nxt = client.configurations(rid, limit=3, cursor=page["next_cursor"])
    T.check(nxt["items"][0] not in page["items"], "the cursor continues the walk")
    T.check(client.configurations(rid, limit=1, offset=7)["items"] == nxt["items"][:1], "offset 7 = after the page")
    walk = list(client.iter_configurations(rid, page_size=500))
    key = lambda c: json.dumps(c, sort_keys=True)  # noqa: E731
    T.check(len(walk) == feasible and len({key(c) for c in walk}) == feasible,
            "iter_configurations walks the %d feasible configurations once: %d" % (feasible, len(walk)))
    T.check(len(list(client.iter_configurations(rid, page_size=4, limit=10))) == 10, "limit stops the walk")
    streamed = list(client.stream(rid))
    T.check(sorted(map(key, streamed)) == sorted(map(key, walk)), "the stream gives the same set")

    s1, s2 = client.samples(rid, n=5, seed=11), client.samples(rid, n=5, seed=11)
    T.check(s1 == s2 and len(s1) == 5, "samples: the same seed, the same samples")
    for c in s1:
        g, p = client.check(rid, c), client.check(rid, c, method="POST")
        T.check(g["feasible"] and p["feasible"] and g["costs"] == p["costs"], "GET and POST check agree on a sample")
    v = client.check(rid, config)
    T.check(v["feasible"] is False and v["violated"][0]["path"] == "$.budgets.memory",
            "check names the memory budget: %r" % v["violated"])
    ex = client.explain(rid, param="batch_size", value=512)
    T.check(ex["kept"] is False and ex["because"][0]["path"] == "$.budgets.memory", "explain a removed value: %r" % ex)
    ex = client.explain(rid, config=config)
    T.check(any(c["path"] == "$.budgets.memory" and c["holds"] is False for c in ex["constraints"]),
            "explain a configuration: every constraint with its value")
    rows = client.max(rid, "batch_size", per="block")
    T.check(len(rows) == 2 and all("batch_size" in r for r in rows), "max per block: %r" % rows)
    low = client.min(rid, "batch_size", per="block")
    T.check([r["block"] for r in low] == [r["block"] for r in rows] and
            all(a["batch_size"] <= b["batch_size"] for a, b in zip(low, rows) if b["batch_size"] is not None),
            "min per block, at most max: %r" % low)
    hm = client.heatmap(rid, "batch_size", "width")
    T.check(len(hm["feasible"]) == len(hm["y_values"]) or len(hm["feasible"]) == len(hm["x_values"]), "heatmap")

    expect_error(lambda: client.check(rid, dict(config, resolution=130)), 422, "invalid-field", "$.config.resolution")
    expect_error(lambda: client.reduce(dict(query, budgets={"memory": "16 gigs"})), 422, "invalid-field",
                 "$.budgets.memory")
    expect_error(lambda: client.reduction("0" * 32), 404, "not-found")
    expect_error(lambda: client.configurations(rid, limit=-1), 400, "bad-parameter", "limit")
    expect_error(lambda: client.min(rid, "block"), 422, "invalid-field", "param")
    # the query string cannot carry a string that looks like a number: check() POSTs it
    T.check(not client._get_safe({"a": "12"}) and not client._get_safe({"a": {"_name": "x"}})
            and not client._get_safe({"timeout": 3}) and client._get_safe({"a": "relu", "b": 2, "c": 0.5}),
            "GET only for configurations the query string carries exactly")


class Scripted(http.server.BaseHTTPRequestHandler):
    """Answers from a script: a list of (status, headers, body) per path."""
    protocol_version = "HTTP/1.1"
    script = {}
    seen = []

    def log_message(self, *args):
        pass

    def _answer(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n else b""
        Scripted.seen.append((self.command, self.path, dict(self.headers), body, self.client_address[1]))
        steps = Scripted.script.get(self.path.split("?")[0], [])
        status, headers, out = steps.pop(0) if len(steps) > 1 else steps[0]
        data = out if isinstance(out, bytes) else json.dumps(out).encode()
        self.send_response(status)
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        if headers.get("Connection") == "close":
            self.close_connection = True

    do_GET = do_POST = _answer


def test_scripted():
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Scripted)
    th = threading.Thread(target=srv.serve_forever, daemon=True)
    th.start()
    try:
        url = "http://127.0.0.1:%d" % srv.server_address[1]
        c = DnnsatClient(url, token="sixteen-characters-token", retries=3, max_retry_wait=2)
        J = {"Content-Type": "application/json"}
        P = {"Content-Type": "application/problem+json"}
        busy = {"type": "https://dnnsat.dev/problems/busy", "title": "Busy", "status": 429, "detail": "queue full"}
        Scripted.script = {
            "/v1/devices": [(429, dict(P, **{"Retry-After": "1"}), busy), (503, dict(P, **{"Retry-After": "0"}), busy),
                            (200, J, {"devices": [{"name": "x"}]})],
            "/v1/templates": [(429, dict(P, **{"Retry-After": "0"}), busy)],
            "/v1/reductions": [(202, J, {"id": "abc", "status": "running"})],
            "/v1/reductions/abc": [(202, J, {"id": "abc", "status": "running"}),
                                   (200, dict(J, Connection="close"), {"id": "abc", "status": "exact", "feasible": "3"})],
            "/healthz": [(200, J, {"status": "ok"})],
            "/v1/reductions/abc/samples": [(502, {"Content-Type": "text/html"}, b"<html>bad gateway</html>")],
        }
        t = time.monotonic()
        T.check(c.devices() == [{"name": "x"}], "429 then 503 then 200: the answer")
        T.check(time.monotonic() - t >= 0.9, "Retry-After: 1 was honored")
        e = expect_error(c.templates, 429, "busy")
        T.check(e is not None and e.retry_after == 0, "after `retries` tries the 429 is raised with retry_after")
        T.check(sum(1 for s in Scripted.seen if s[1] == "/v1/templates") == 4, "1 try + 3 retries")
        T.check(all(s[2].get("Authorization") == "Bearer sixteen-characters-token" for s in Scripted.seen),
                "the bearer token goes with every request")
        Scripted.seen.clear()
        red = c.reduce({"model": "m", "space": {}}, timeout=1, poll=1)
        T.check(red["status"] == "exact", "reduce polls a 202 until exact: %r" % red)
        gets = [s for s in Scripted.seen if s[0] == "GET"]
        T.check(len(gets) == 2 and "timeout=1" in gets[0][1], "each poll continues the count: %r" % [g[1] for g in gets])
        T.check(json.loads(Scripted.seen[0][3])["timeout"] == 1, "the solver timeout is sent")
        ports = {s[4] for s in Scripted.seen}
        T.check(len(ports) == 1, "one keep-alive connection for the POST and the polls: %r" % ports)
        T.check(c.health() == {"status": "ok"}, "a new connection after the server closed one")
        T.check(Scripted.seen[-1][4] not in ports, "it was a new connection")
        expect_error(lambda: c.samples("abc"), 502)
    finally:
        srv.shutdown()
        srv.server_close()


def main():
    d = harness.Daemon()
    try:
        T.run(test_real, DnnsatClient(d.url))
    finally:
        d.stop()
    T.run(test_scripted)
    T.finish()


if __name__ == "__main__":
    main()
