"""examples/python/dnnsat_client.py - a small client for the dnnsat HTTP API
(docs/api.md; the contract is schemas/openapi.json). Python 3 standard library
only: copy this one file next to your tuner.

    from dnnsat_client import DnnsatClient, DnnsatError

    client = DnnsatClient("http://127.0.0.1:8080")
    red = client.reduce({"model": "resnet50", "space": space, "device": "a100-40gb",
                         "budgets": {"memory": "16GiB"}})
    print(red["feasible"], "of", red["total"], "fit")
    for config in client.iter_configurations(red["id"]):
        ...
    verdict = client.check(red["id"], {"batch_size": 64, "block": "basic", ...})

Design:
  - one persistent HTTP/1.1 connection per thread (the per-trial check is the
    hot path and a new TCP connection per call would cost more than the check
    itself); a connection the server closed is reopened once, transparently;
  - every non-2xx answer raises DnnsatError with the RFC 9457 problem's
    fields (status, type, title, detail, path) so callers can tell a bad
    field (422, `path` names it) from an unknown reduction (404);
  - 429 and 503 are retried, waiting what Retry-After says (or a short
    exponential backoff when it says nothing), up to `retries` times; the
    last answer is then raised;
  - counts stay the decimal strings the server sends (they exceed 2**53);
  - nothing here knows about NNI or Optuna: examples/optuna and examples/nni
    build on it.
"""

import email.utils
import http.client
import json
import threading
import time
import urllib.parse

__all__ = ["DnnsatClient", "DnnsatError", "FeasibilityCache"]

_RETRY_STATUSES = (429, 503)
_RECONNECT_ERRORS = (http.client.RemoteDisconnected, http.client.BadStatusLine,
                     BrokenPipeError, ConnectionResetError, ConnectionAbortedError)


class DnnsatError(Exception):
    """An error answer of the service (application/problem+json, RFC 9457).

    Attributes:
        status: the HTTP status (422, 404, ...); 0 when no answer came back.
        type: the problem type URI, e.g. "https://dnnsat.dev/problems/invalid-field".
        title: the short title ("Invalid field").
        detail: the message, e.g. '$.budgets.memory: "16 gigs" is not a size'.
        path: the JSON path (or query parameter) at fault, or None.
        instance: the request path the problem is about.
        retry_after: seconds the server asked to wait (429/503), or None.
        body: the whole decoded problem object (or the raw text).
    """

    def __init__(self, status, type=None, title=None, detail=None, path=None,
                 instance=None, retry_after=None, body=None):
        self.status = status
        self.type = type
        self.title = title
        self.detail = detail
        self.path = path
        self.instance = instance
        self.retry_after = retry_after
        self.body = body
        text = "HTTP %s" % status
        if title:
            text += " %s" % title
        if detail:
            text += ": %s" % detail
        if path and (not detail or path not in detail):
            text += " (at %s)" % path
        super().__init__(text)

    @property
    def problem(self):
        """The last part of the problem type URI ("invalid-field", "not-found", ...)."""
        return (self.type or "").rsplit("/", 1)[-1] or None


def _retry_after_seconds(value):
    """Retry-After as seconds (delta-seconds or an HTTP date), None if absent or unreadable."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _query_string(params):
    """params (a dict; None values dropped) as an URL query string, '' when empty."""
    items = [(k, _scalar_text(v)) for k, v in params.items() if v is not None]
    return ("?" + urllib.parse.urlencode(items)) if items else ""


def _scalar_text(v):
    """A query-string value: booleans as true/false, floats in their shortest exact form."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return repr(v)
    return str(v)


def _looks_like_number_or_json(s):
    """True when the server would read the query-string text s as a number
    or as JSON (api_check.c), so a string value must travel in a POST body."""
    if s == "" or s[0] in "{[+ " or s != s.strip():
        return True
    try:
        float(s)
        return True
    except ValueError:
        return s.lower() in ("nan", "inf", "infinity", "-inf", "-infinity")


class DnnsatClient:
    """A client of one dnnsat server.

    Args:
        base_url: the server root, e.g. "http://127.0.0.1:8080" (https works too).
        token: a bearer token when the server runs with --token-file.
        timeout: socket timeout in seconds for one request (requests that wait
            for the solver get their solver timeout added).
        retries: how many times a 429 or 503 answer is retried.
        max_retry_wait: the longest wait between two tries, seconds.

    Safe to share between threads: each thread gets its own connection.
    """

    def __init__(self, base_url, token=None, timeout=30.0, retries=5, max_retry_wait=30.0):
        url = urllib.parse.urlsplit(base_url)
        if url.scheme not in ("http", "https") or not url.hostname:
            raise ValueError("base_url must be http(s)://host[:port][/prefix], not %r" % base_url)
        self.base_url = base_url.rstrip("/")
        self._scheme = url.scheme
        self._host = url.hostname
        self._port = url.port
        self._prefix = url.path.rstrip("/")
        self.token = token
        self.timeout = timeout
        self.retries = retries
        self.max_retry_wait = max_retry_wait
        self._local = threading.local()

    # ---- transport ----

    def _new_connection(self, timeout):
        cls = http.client.HTTPSConnection if self._scheme == "https" else http.client.HTTPConnection
        return cls(self._host, self._port, timeout=timeout)

    def _connection(self, timeout):
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._local.conn = self._new_connection(timeout)
        conn.timeout = timeout
        if conn.sock is not None:
            conn.sock.settimeout(timeout)
        return conn

    def close(self):
        """Closes this thread's connection (a later call opens a new one)."""
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _headers(self, body):
        h = {"Accept": "application/json, application/problem+json, application/x-ndjson"}
        if body is not None:
            h["Content-Type"] = "application/json"
        if self.token:
            h["Authorization"] = "Bearer " + self.token
        return h

    def _send_once(self, method, target, data, timeout):
        """One request on this thread's connection; reopens it once when the
        server had closed it. Returns (status, headers, body bytes)."""
        for attempt in (0, 1):
            conn = self._connection(timeout)
            reused = conn.sock is not None
            try:
                conn.request(method, target, body=data, headers=self._headers(data))
                resp = conn.getresponse()
                body = resp.read()
                if resp.will_close:
                    conn.close()
                return resp.status, resp.headers, body
            except _RECONNECT_ERRORS:
                conn.close()
                if attempt == 1 or not reused:
                    raise
            except BaseException:
                conn.close()
                raise
        raise AssertionError("unreachable")

    def request(self, method, path, params=None, body=None, solver_timeout=None):
        """Sends one request and returns (status, decoded JSON body).

        path is relative to the server root ("/v1/devices"); params are query
        parameters; body is a JSON-able object. 429 and 503 are retried per
        Retry-After; any other status >= 400 raises DnnsatError.
        """
        target = self._prefix + path + _query_string(params or {})
        data = None if body is None else json.dumps(body).encode("utf-8")
        timeout = self.timeout + (solver_timeout or 0)
        tries = 0
        while True:
            status, headers, raw = self._send_once(method, target, data, timeout)
            if status < 400:
                ctype = headers.get("Content-Type", "")
                if raw and ctype.startswith(("application/json", "application/problem+json")):
                    return status, json.loads(raw.decode("utf-8"))
                return status, raw.decode("utf-8")
            err = self._error(status, headers, raw, path)
            if status in _RETRY_STATUSES and tries < self.retries:
                wait = err.retry_after if err.retry_after is not None else 0.5 * (2 ** tries)
                time.sleep(min(wait, self.max_retry_wait))
                tries += 1
                continue
            raise err

    @staticmethod
    def _error(status, headers, raw, path):
        retry_after = _retry_after_seconds(headers.get("Retry-After"))
        text = raw.decode("utf-8", "replace")
        try:
            p = json.loads(text)
        except ValueError:
            p = None
        if not isinstance(p, dict):
            return DnnsatError(status, detail=text.strip() or None, instance=path,
                               retry_after=retry_after, body=text)
        return DnnsatError(status, p.get("type"), p.get("title"), p.get("detail"), p.get("path"),
                           p.get("instance", path), retry_after, p)

    def _get(self, path, params=None, solver_timeout=None):
        return self.request("GET", path, params, None, solver_timeout)[1]

    def _post(self, path, body, solver_timeout=None):
        return self.request("POST", path, None, body, solver_timeout)[1]

    @staticmethod
    def _rid(reduction):
        """A reduction id from an id string or a reduction object."""
        rid = reduction.get("id") if isinstance(reduction, dict) else reduction
        if not isinstance(rid, str) or not rid:
            raise ValueError("a reduction id (a string) or a reduction object is needed, not %r" % (reduction,))
        return urllib.parse.quote(rid, safe="")

    # ---- service and catalogs ----

    def health(self):
        """GET /healthz: {"status": "ok"} while the server runs."""
        return self._get("/healthz")

    def ready(self):
        """GET /readyz: {"status": "ready"|"degraded", "database": ...}."""
        return self._get("/readyz")

    def templates(self, name=None):
        """GET /v1/templates (a list of templates) or /v1/templates/{name} (one)."""
        if name is None:
            return self._get("/v1/templates")["templates"]
        return self._get("/v1/templates/" + urllib.parse.quote(name, safe=""))

    def devices(self):
        """GET /v1/devices: the GPU catalog, a list of device objects."""
        return self._get("/v1/devices")["devices"]

    def estimate(self, model, config, device=None, workload=None, per_op=False):
        """POST /v1/estimate: every cost of one configuration of a model.

        model is a preset name ("resnet50"), {"template": ...} or a model
        object; config maps hyperparameters to values.
        """
        body = {"model": model, "config": config, "per_op": bool(per_op)}
        if device is not None:
            body["device"] = device
        if workload is not None:
            body["workload"] = workload
        return self._post("/v1/estimate", body)

    def check_query(self, query, config):
        """POST /v1/check: checks config against a query without creating a
        reduction (the server compiles the query once and keeps it)."""
        body = dict(query)
        body["config"] = config
        return self._post("/v1/check", body, solver_timeout=query.get("timeout"))

    # ---- reductions ----

    def create_reduction(self, query, timeout=None):
        """POST /v1/reductions once: returns (status, reduction). status is
        201 (computed now), 200 (from the cache) or 202 (the solver deadline
        passed: bounds only; reduction() continues the count)."""
        body = dict(query)
        if timeout is not None:
            body["timeout"] = timeout
        return self.request("POST", "/v1/reductions", None, body,
                            solver_timeout=body.get("timeout", 10))

    def reduction(self, reduction_id, timeout=None):
        """GET /v1/reductions/{id}: the reduction; while it is not exact this
        request continues the count for up to `timeout` seconds."""
        params = {"timeout": timeout}
        return self._get("/v1/reductions/" + self._rid(reduction_id), params,
                         solver_timeout=timeout if timeout is not None else 10)

    def reduce(self, query, timeout=None, wait=600.0, poll=10.0):
        """Creates a reduction and waits until it is exact.

        POSTs the query (with `timeout` seconds for the solver when given),
        then, while the answer is 202 / "running", GETs it again (each GET
        continues the count for `poll` seconds) until it is exact, the server
        stops counting ("bounds": --max-compute used up; certified bounds are
        returned) or `wait` seconds have passed (the running reduction is
        returned: check its "status").
        """
        deadline = time.monotonic() + wait
        _, red = self.create_reduction(query, timeout)
        while red.get("status") == "running" and time.monotonic() < deadline:
            left = max(1.0, min(poll, deadline - time.monotonic()))
            red = self.reduction(red["id"], timeout=round(left, 3))
        return red

    def configurations(self, reduction_id, limit=100, cursor=None, offset=None, timeout=None):
        """GET /v1/reductions/{id}/configurations: one page,
        {"items": [...], "next_cursor": C or None}. Give `cursor` (from the
        previous page) or `offset` (the K-th feasible configuration; needs the
        exact count), not both."""
        params = {"limit": limit, "cursor": cursor, "offset": offset, "timeout": timeout}
        return self._get("/v1/reductions/%s/configurations" % self._rid(reduction_id), params,
                         solver_timeout=timeout or 10)

    def iter_configurations(self, reduction_id, page_size=1000, limit=None):
        """Yields feasible configurations in the space's order, walking pages
        with cursors (resumable: each page's cursor is opaque and stable).
        Stops after `limit` configurations when given."""
        cursor = None
        given = 0
        while True:
            want = page_size if limit is None else min(page_size, limit - given)
            if want <= 0:
                return
            page = self.configurations(reduction_id, limit=want, cursor=cursor)
            for item in page["items"]:
                yield item
            given += len(page["items"])
            cursor = page.get("next_cursor")
            if not cursor or not page["items"]:
                return

    def stream(self, reduction_id, timeout=None):
        """Yields every feasible configuration from GET
        .../configurations?format=jsonl (one streamed response, its own
        connection). The server needs the exact count and refuses (413) a set
        larger than its --max-space."""
        target = "%s/v1/reductions/%s/configurations%s" % (
            self._prefix, self._rid(reduction_id), _query_string({"format": "jsonl", "timeout": timeout}))
        tries = 0
        while True:
            conn = self._new_connection(self.timeout + (timeout or 10))
            try:
                conn.request("GET", target, headers=self._headers(None))
                resp = conn.getresponse()
                if resp.status >= 400:
                    err = self._error(resp.status, resp.headers, resp.read(), target)
                    if resp.status in _RETRY_STATUSES and tries < self.retries:
                        wait = err.retry_after if err.retry_after is not None else 0.5 * (2 ** tries)
                        time.sleep(min(wait, self.max_retry_wait))
                        tries += 1
                        continue
                    raise err
                for line in resp:
                    line = line.strip()
                    if line:
                        yield json.loads(line.decode("utf-8"))
                return
            finally:
                conn.close()

    def samples(self, reduction_id, n=10, seed=None, timeout=None, count_timeout=None):
        """GET /v1/reductions/{id}/samples: `n` seeded samples of the
        feasible set (a list of configurations, each feasible; the same seed
        gives the same list), within `timeout` seconds: uniform once the
        count is exact, approximate while it runs (a huge space), and fewer
        than n when the deadline passed first. `count_timeout` (0 to
        `timeout`; the server's default is half of it) is how much of the
        deadline goes to bringing the count forward before drawing: 0 draws
        from the count as it stands (a space whose count never ends).
        Continuous parameters (uniform, loguniform, normal, ...) are
        not part of a sample: they pass through and no budget depends on them."""
        params = {"n": n, "seed": seed, "timeout": timeout, "count_timeout": count_timeout}
        return self._get("/v1/reductions/%s/samples" % self._rid(reduction_id), params,
                         solver_timeout=timeout or 10)["items"]

    def check(self, reduction_id, config, method=None):
        """Checks one configuration against the reduction's query:
        {"feasible": bool, "violated": [{"constraint","path","value","limit"}],
        "costs": {...}}.

        Uses GET .../check?name=value&... (no body: the cheapest per-trial
        call) when every value is a number or a string the server cannot
        mistake for a number or JSON, and POST .../check {"config": ...}
        otherwise (nested choices, booleans, numeric-looking strings, a
        parameter named "timeout"). method="GET" or "POST" forces one.
        """
        path = "/v1/reductions/%s/check" % self._rid(reduction_id)
        if method is None:
            method = "GET" if self._get_safe(config) else "POST"
        if method == "GET":
            return self._get(path, config)
        return self._post(path, {"config": config})

    @staticmethod
    def _get_safe(config):
        """True when the query-string form of check reads config back exactly."""
        for name, v in config.items():
            if name == "timeout" or v is None or isinstance(v, (bool, dict, list)):
                return False
            if isinstance(v, float) and v != v:
                return False
            if isinstance(v, str) and _looks_like_number_or_json(v):
                return False
        return True

    def explain(self, reduction_id, param=None, value=None, config=None, timeout=None):
        """Why a value was removed (GET .../explain?param=P&value=V:
        {"param","value","kept","because":[...]}) or, with `config`, every
        constraint of the query on that configuration with its value and limit
        (POST .../explain: {"feasible","constraints":[...],"violated":[...],"costs"})."""
        path = "/v1/reductions/%s/explain" % self._rid(reduction_id)
        if config is not None:
            return self._post(path, {"config": config}, solver_timeout=timeout)
        if param is None or value is None:
            raise ValueError("explain needs param and value, or config")
        text = value if isinstance(value, str) else json.dumps(value)
        return self._get(path, {"param": param, "value": text, "timeout": timeout},
                         solver_timeout=timeout or 10)

    def max(self, reduction_id, param, per=None, timeout=None):
        """GET .../max: the largest feasible value of `param`, overall or per
        value of `per`: a list of rows like {"depth": 18, "batch_size": 512}
        (None where nothing fits)."""
        return self._extreme("max", reduction_id, param, per, timeout)

    def min(self, reduction_id, param, per=None, timeout=None):
        """GET .../min: the smallest feasible value of `param`, overall or per
        value of `per`, in the rows max gives."""
        return self._extreme("min", reduction_id, param, per, timeout)

    def _extreme(self, goal, reduction_id, param, per, timeout):
        return self._get("/v1/reductions/%s/%s" % (self._rid(reduction_id), goal),
                         {"param": param, "per": per, "timeout": timeout},
                         solver_timeout=timeout or 10)["rows"]

    def heatmap(self, reduction_id, x, y, timeout=None):
        """GET .../heatmap: {"x","y","x_values","y_values","feasible":[[bool]]},
        whether some feasible configuration has each pair of values."""
        return self._get("/v1/reductions/%s/heatmap" % self._rid(reduction_id),
                         {"x": x, "y": y, "timeout": timeout}, solver_timeout=timeout or 10)


class FeasibilityCache:
    """Whether configurations of one reduction fit, asked of the server once
    per distinct configuration (a tuner proposes the same one again and
    again): cache(config) -> bool. A configuration the server does not
    accept (422: a value that is not in the space) does not fit; any other
    error is raised. `calls` counts the checks sent. Thread-safe."""

    def __init__(self, client, reduction_id, max_entries=100000):
        self.client = client
        self.reduction_id = reduction_id
        self.max_entries = max_entries
        self.calls = 0
        self._verdicts = {}
        self._lock = threading.Lock()

    def __call__(self, config):
        key = json.dumps(config, sort_keys=True)
        with self._lock:
            v = self._verdicts.get(key)
            if v is None:
                self.calls += 1
        if v is not None:
            return v
        try:
            v = bool(self.client.check(self.reduction_id, config)["feasible"])
        except DnnsatError as e:
            if e.status != 422:
                raise
            v = False
        with self._lock:
            if len(self._verdicts) >= self.max_entries:
                self._verdicts.clear()
            self._verdicts[key] = v
        return v
