"""tests/first_line.py - the first line a started daemon writes to its
stdout ("dnnsatd: listening on http://HOST:PORT/ ..."), read without
blocking past a deadline: shared by the e2e and cluster tests, which start
dnnsatd with stdout on a pipe and must not hang when it dies or stays
silent."""
import os
import select
import time


def first_line(proc, seconds):
    """Bytes up to and including the first newline of proc.stdout (a pipe),
    or what came before `seconds` passed or the pipe closed."""
    line = b""
    deadline = time.time() + seconds
    fd = proc.stdout.fileno()
    while not line.endswith(b"\n") and time.time() < deadline:
        r, _, _ = select.select([fd], [], [], 0.2)
        if r:
            chunk = os.read(fd, 4096)
            if not chunk:
                break
            line += chunk
    return line
