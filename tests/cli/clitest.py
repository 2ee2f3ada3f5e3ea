"""tests/cli/clitest.py - what the Python tests of the command line
(test_import.py, test_hf_bert.py; tests/schema/test_schemas.py takes the
counters) share: where the sources and the built
`dnnsat` are (top_srcdir and top_builddir, as `make check` exports them;
DNNSAT_DATA_DIR defaults to the sources' schemas/), running `dnnsat`, its
estimate as JSON, and the pass and fail counters with the closing
"N passed, N failed" line. Imported from the tests' own folder (a script's
folder is on Python's path)."""
import json
import os
import subprocess

TOP = os.environ.get("top_srcdir", ".")
BUILD = os.environ.get("top_builddir", ".")
DNNSAT = os.path.join(BUILD, "dnnsat")
os.environ.setdefault("DNNSAT_DATA_DIR", os.path.join(TOP, "schemas"))
passed = failed = 0


def check(name, cond, detail=""):
    """Counts one check; a failure is printed with its detail."""
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print("FAIL", name, detail)


def run(*args):
    """`dnnsat ARGS`: (exit status, stdout, stderr); two minutes at most."""
    p = subprocess.run([DNNSAT, *args], capture_output=True, text=True, errors="replace", timeout=120)
    return p.returncode, p.stdout, p.stderr


def estimate_json(*args):
    """`dnnsat estimate ARGS --json`: (the answer, "") when it ran (exit
    status 0 fits, 1 does not), else (None, its stderr)."""
    rc, out, err = run("estimate", *args, "--json")
    if rc not in (0, 1) or not out.strip():
        return None, err
    return json.loads(out), ""


def report():
    """Prints "N passed, N failed"; returns the exit status (1 on any failure)."""
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0
