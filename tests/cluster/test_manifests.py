#!/usr/bin/python3
"""tests/cluster/test_manifests.py - the deployment files agree with the
server they deploy (no cluster or container engine needed):

  - deploy/k8s/*.yaml and docker/compose.yaml parse (python3-yaml);
  - kustomization.yaml lists every manifest of the folder but the example
    Secret, and they are the kinds a cluster deployment needs: Deployment,
    Service, HorizontalPodAutoscaler, PodDisruptionBudget;
  - the probes ask paths that are routes of server/srv_route.c (readiness
    /readyz, liveness /healthz) on the container's port, and the port is
    the one --listen names;
  - terminationGracePeriodSeconds covers the preStop sleep plus dnnsatd's
    own shutdown (server/srv_start.c: a one-second solver slice, up to 3 s
    for answered requests to reach their clients, plus a margin of 5 s for
    closing the database), and compose's stop_grace_period covers the same
    shutdown;
  - DNNSAT_DATABASE_URL comes from a Secret (never a literal), every
    DNNSAT_* variable set is a flag of server/srv_config.c, the selectors
    of the Service, PDB and HPA reach the Deployment's pods, memory settings
    fit under the memory limit;
  - compose: three replicas of dnnsat behind an nginx service whose config
    files exist and include docker/nginx-proxy.conf; no host port but
    nginx's;
  - nginx accepts docker/nginx.conf's syntax (nginx -t, when nginx is
    installed: it is in scripts/install-deps.sh), and `kubectl kustomize`
    renders the folder when a kubectl is on PATH (noted when not).

Prints one line per failed check and "N passed, M failed"; exit status 1 on
any failure.
"""
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time

import yaml

sys.path.insert(0, os.path.join(os.environ.get("top_srcdir", "."), "tests", "integration"))
import harness  # noqa: E402  (the pass/fail tally the black-box tests share)

TOP = os.environ.get("top_srcdir", ".")
K8S = os.path.join(TOP, "deploy", "k8s")
TALLY = harness.Tally("manifests")


def check(name, ok, detail=""):
    """One check of the tally (tests/integration/harness.py)."""
    return TALLY.check(bool(ok), name + (": " + str(detail)[:400] if detail != "" and not ok else ""))


def read(rel):
    with open(os.path.join(TOP, rel)) as f:
        return f.read()


def routes():
    """GET paths of server/srv_route.c's table."""
    return set(re.findall(r'\{\s*"GET",\s*"([^"]+)"', read("server/srv_route.c")))


def flags():
    """The flags of server/srv_config.c's option table."""
    return set(re.findall(r'\{\s*"([a-z-]+)",\s*K_', read("server/srv_config.c")))


def shutdown_seconds():
    """dnnsatd's longest shutdown, from server/srv_start.c: the solver slice
    (1 s), the wait for answered requests ("up to N s"), and 5 s for closing
    the database and freeing everything."""
    text = read("server/srv_start.c")
    m = re.search(r"give answered requests up to (\d+) s", text)
    check("srv_start.c documents its wait for answered requests", m is not None)
    slice_ok = re.search(r"next one-second slice", text) is not None
    check("srv_start.c documents the one-second solver slice", slice_ok)
    return (int(m.group(1)) if m else 3) + 1 + 5


def quantity_bytes(q):
    m = re.fullmatch(r"(\d+)(Ki|Mi|Gi)?", str(q))
    return int(m.group(1)) * {None: 1, "Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30}[m.group(2)]


def load_k8s():
    docs = {}
    for name in sorted(os.listdir(K8S)):
        if not name.endswith(".yaml"):
            continue
        try:
            with open(os.path.join(K8S, name)) as f:
                docs[name] = [d for d in yaml.safe_load_all(f) if d is not None]
            check("%s parses" % name, True)
        except yaml.YAMLError as e:
            check("%s parses" % name, False, e)
    return docs


def check_kustomization(docs):
    k = docs.get("kustomization.yaml", [{}])[0]
    res = k.get("resources") or []
    others = sorted(n for n in docs if n not in ("kustomization.yaml", "secret.example.yaml"))
    check("kustomization lists every manifest but the example Secret", sorted(res) == others, (res, others))
    check("kustomization leaves the example Secret out", "secret.example.yaml" not in res)
    kinds = {}
    for n in res:
        for d in docs.get(n, []):
            kinds[d.get("kind")] = d
    for kind in ("Deployment", "Service", "HorizontalPodAutoscaler", "PodDisruptionBudget"):
        check("kustomization has a %s" % kind, kind in kinds)
    return kinds


def check_deployment(dep, known_routes, known_flags):
    spec = dep.get("spec", {})
    pod = spec.get("template", {}).get("spec", {})
    cs = pod.get("containers") or [{}]
    c = cs[0]
    ports = dict((p.get("name"), p.get("containerPort")) for p in c.get("ports", []))
    args = c.get("args") or c.get("command") or []
    listen = args[args.index("--listen") + 1] if "--listen" in args else ""
    check("the container listens on 0.0.0.0:<its containerPort>", listen == "0.0.0.0:%s" % ports.get("http"),
          (listen, ports))
    for probe, path in (("readinessProbe", "/readyz"), ("livenessProbe", "/healthz")):
        p = (c.get(probe) or {}).get("httpGet") or {}
        check("%s asks %s" % (probe, path), p.get("path") == path, p)
        check("%s: %s is a route of srv_route.c" % (probe, path), p.get("path") in known_routes, sorted(known_routes))
        check("%s on the http port" % probe, p.get("port") in ("http", ports.get("http")), p)
    pre = (((c.get("lifecycle") or {}).get("preStop") or {}).get("exec") or {}).get("command") or []
    check("preStop sleeps so that endpoints drain first", len(pre) == 2 and pre[0] == "sleep" and pre[1].isdigit(),
          pre)
    sleep = int(pre[1]) if len(pre) == 2 and pre[1].isdigit() else 0
    grace = pod.get("terminationGracePeriodSeconds", 30)
    need = sleep + shutdown_seconds()
    check("terminationGracePeriodSeconds (%s) >= preStop sleep + dnnsatd's shutdown (%d)" % (grace, need),
          isinstance(grace, int) and grace >= need)
    env = dict((e.get("name"), e) for e in c.get("env", []))
    db = env.get("DNNSAT_DATABASE_URL", {})
    ref = ((db.get("valueFrom") or {}).get("secretKeyRef")) or {}
    check("DNNSAT_DATABASE_URL from a Secret, never a literal", "value" not in db and ref.get("name") and ref.get("key"),
          db)
    for name in env:
        if name.startswith("DNNSAT_"):
            flag = name[len("DNNSAT_"):].lower().replace("_", "-")
            check("%s is a flag of srv_config.c (--%s)" % (name, flag), flag in known_flags)
    res = c.get("resources") or {}
    for part in ("requests", "limits"):
        check("resources.%s has cpu and memory" % part, all(k in (res.get(part) or {}) for k in ("cpu", "memory")),
              res)
    limit = quantity_bytes((res.get("limits") or {}).get("memory", "0"))
    kept = sum(int((env.get(n) or {}).get("value", "0"))
               for n in ("DNNSAT_REGISTRY_BYTES", "DNNSAT_CACHE_BYTES", "DNNSAT_MAX_BUFFERED"))
    check("DNNSAT_MAX_BUFFERED set (its default, 512 MiB, is for a machine, not a pod)", "DNNSAT_MAX_BUFFERED" in env)
    check("compiled queries + result cache + buffered bodies and answers (%d MiB) under the memory limit (%d MiB)"
          % (kept >> 20, limit >> 20), 0 < kept < limit)
    return sleep, grace


def check_selectors(kinds):
    dep = kinds.get("Deployment", {})
    labels = dep.get("spec", {}).get("template", {}).get("metadata", {}).get("labels", {})
    sel = dep.get("spec", {}).get("selector", {}).get("matchLabels", {})
    check("the Deployment's selector matches its pods", sel and all(labels.get(k) == v for k, v in sel.items()),
          (sel, labels))
    svc = kinds.get("Service", {}).get("spec", {})
    check("the Service selects the pods", svc.get("selector") and
          all(labels.get(k) == v for k, v in svc.get("selector", {}).items()), svc.get("selector"))
    check("the Service targets the http port", all(p.get("targetPort") == "http" for p in svc.get("ports", [])))
    pdb = kinds.get("PodDisruptionBudget", {}).get("spec", {})
    check("the PDB selects the pods", all(labels.get(k) == v for k, v in
                                          (pdb.get("selector", {}).get("matchLabels") or {"": None}).items()))
    hpa = kinds.get("HorizontalPodAutoscaler", {}).get("spec", {})
    tgt = hpa.get("scaleTargetRef", {})
    check("the HPA scales the Deployment", tgt.get("kind") == "Deployment" and
          tgt.get("name") == dep.get("metadata", {}).get("name"), tgt)
    check("the HPA keeps at least the PDB's minAvailable + 1 replicas",
          isinstance(pdb.get("minAvailable"), int) and hpa.get("minReplicas", 0) > pdb["minAvailable"],
          (hpa.get("minReplicas"), pdb.get("minAvailable")))


def check_compose():
    try:
        c = yaml.safe_load(read("docker/compose.yaml"))
        check("docker/compose.yaml parses", True)
    except yaml.YAMLError as e:
        check("docker/compose.yaml parses", False, e)
        return
    svcs = c.get("services", {})
    d = svcs.get("dnnsat", {})
    n = svcs.get("nginx", {})
    check("compose: dnnsat has 3 replicas", (d.get("deploy") or {}).get("replicas") == 3, d.get("deploy"))
    check("compose: dnnsat publishes no host port (nginx does)", "ports" not in d, d.get("ports"))
    check("compose: nginx publishes the service", bool(n.get("ports")), n)
    vols = [v.split(":")[0] for v in n.get("volumes", []) if isinstance(v, str)]
    for f in ("./nginx.conf", "./nginx-proxy.conf"):
        check("compose: nginx mounts %s, which exists" % f, f in vols and os.path.exists(os.path.join(TOP, "docker", f)),
              vols)
    check("docker/nginx.conf includes the shared proxy rules",
          "include /etc/nginx/dnnsat-proxy.conf;" in read("docker/nginx.conf") and
          any(v.endswith("nginx-proxy.conf:/etc/nginx/dnnsat-proxy.conf:ro") for v in n.get("volumes", [])))
    grace = str(d.get("stop_grace_period", "10s"))
    m = re.fullmatch(r"(\d+)s", grace)
    check("compose: stop_grace_period (%s) covers dnnsatd's shutdown" % grace,
          m is not None and int(m.group(1)) >= shutdown_seconds())


def check_nginx_syntax():
    """nginx -t on docker/nginx.conf, its include and upstream host made local."""
    nginx = os.environ.get("DNNSAT_TEST_NGINX", "/usr/sbin/nginx")
    if not os.access(nginx, os.X_OK):
        check("nginx is installed (scripts/install-deps.sh: nginx-light)", False, nginx)
        return
    d = tempfile.mkdtemp(prefix="dnnsat-nginx-t.")
    try:
        # nginx's /tmp paths first: a source tree under /tmp must keep its own path
        conf = read("docker/nginx.conf").replace("/tmp/", d + "/")
        conf = conf.replace("/etc/nginx/dnnsat-proxy.conf",
                            os.path.abspath(os.path.join(TOP, "docker", "nginx-proxy.conf")))
        conf = conf.replace("server dnnsat:8080", "server 127.0.0.1:8080")
        if os.getuid() == 0:
            conf = "user root root;\n" + conf
        with open(os.path.join(d, "nginx.conf"), "w") as f:
            f.write(conf)
        p = subprocess.run([nginx, "-t", "-p", d, "-c", os.path.join(d, "nginx.conf"), "-e", os.path.join(d, "err.log")],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=30)
        check("nginx -t accepts docker/nginx.conf and nginx-proxy.conf", p.returncode == 0,
              p.stdout.decode(errors="replace"))
        if p.returncode == 0:
            check_nginx_problems(nginx, d, conf)
    finally:
        shutil.rmtree(d, ignore_errors=True)


def raw_request(port, data):
    """Sends raw bytes, returns (status, content type, body) of the answer."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        s.sendall(data)
        out = b""
        while True:
            try:
                chunk = s.recv(65536)
            except socket.timeout:
                break
            if not chunk:
                break
            out += chunk
            head, sep, body = out.partition(b"\r\n\r\n")
            m = re.search(rb"(?im)^content-length: *(\d+)", head)
            if sep and m and len(body) >= int(m.group(1)):
                break
    head, _, body = out.partition(b"\r\n\r\n")
    lines = head.decode(errors="replace").split("\r\n")
    status = int(lines[0].split()[1]) if lines and len(lines[0].split()) > 1 else 0
    ctype = next((l.split(":", 1)[1].strip() for l in lines[1:] if l.lower().startswith("content-type:")), "")
    return status, ctype, body


def check_nginx_problems(nginx, d, conf):
    """What nginx answers itself is problem+json (issue 13): the config run
    on a free port, its upstream a closed port, and the heads that
    libmicrohttpd would refuse with HTML sent raw."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]
    conf = conf.replace("listen 8080;", "listen 127.0.0.1:%d;" % port)
    conf = conf.replace("server 127.0.0.1:8080", "server 127.0.0.1:%d" % closed)
    conf = conf.replace("worker_processes auto;", "worker_processes 1;")
    path = os.path.join(d, "run.conf")
    with open(path, "w") as f:
        f.write(conf)
    p = subprocess.Popen([nginx, "-p", d, "-c", path, "-e", os.path.join(d, "err.log"), "-g", "daemon off;"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(300):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.1)
        cases = [
            ("no replica reachable", b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", 502),
            ("HTTP/3.0", b"GET / HTTP/3.0\r\nHost: x\r\n\r\n", 505),
            ("a malformed request line", b"GARBAGE\r\n\r\n", 400),
            ("a malformed header line", b"GET / HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n", 400),
            ("a malformed Content-Length", b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1x\r\n\r\n", 400),
            ("a 60 KB request line", b"GET /" + b"a" * 60000 + b" HTTP/1.1\r\nHost: x\r\n\r\n", 414),
            ("a 60 KB header", b"GET / HTTP/1.1\r\nHost: x\r\nX-A: " + b"a" * 60000 + b"\r\n\r\n", 400),
            ("a body over 64 MiB", b"POST /v1/models HTTP/1.1\r\nHost: x\r\nContent-Length: 70000000\r\n\r\n", 413),
        ]
        for name, data, want in cases:
            try:
                status, ctype, body = raw_request(port, data)
                doc = json.loads(body.decode())
                ok = status == want and ctype == "application/problem+json" and doc.get("status") == want
            except (OSError, ValueError) as e:
                ok, status, ctype, body = False, 0, "", str(e).encode()
            check("nginx answers %s with %d problem+json" % (name, want), ok,
                  "%d %s %r" % (status, ctype, body[:200]))
    finally:
        p.terminate()
        try:
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def check_kustomize():
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        print("NOTE kubectl not on PATH: kustomize rendering not checked (the structure above is)", flush=True)
        return
    p = subprocess.run([kubectl, "kustomize", K8S], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=60)
    ok = p.returncode == 0
    out = p.stdout.decode(errors="replace")
    check("kubectl kustomize renders deploy/k8s", ok, out[-400:])
    if ok:
        kinds = sorted(d.get("kind") for d in yaml.safe_load_all(out) if d)
        check("the rendering has the four objects", kinds ==
              ["Deployment", "HorizontalPodAutoscaler", "PodDisruptionBudget", "Service"], kinds)


def main():
    docs = load_k8s()
    kinds = check_kustomization(docs)
    check_deployment(kinds.get("Deployment", {}), routes(), flags())
    check_selectors(kinds)
    check_compose()
    check_nginx_syntax()
    check_kustomize()
    TALLY.finish()


if __name__ == "__main__":
    main()
